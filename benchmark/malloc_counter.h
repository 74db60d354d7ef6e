#ifndef H2RPC_BENCHMARK_MALLOC_COUNTER_H_
#define H2RPC_BENCHMARK_MALLOC_COUNTER_H_

#include <cstdint>

namespace h2rpc::benchmark {

// Counts every call into the system allocator made by the process (malloc,
// calloc, realloc, memalign, posix_memalign, aligned_alloc, valloc; operator
// new goes through malloc), from any library: h2rpc, nghttp2, zlib,
// protobuf, libstdc++, gRPC. Linking //benchmark:malloc_counter interposes
// those functions in the executable; counting forwards to glibc's
// __libc_* implementations.
//
// Each allocation is attributed to the role of the allocating thread:
// threads named "h2rpc-channel*" are the client, "h2rpc-server*" and
// "h2rpc-worker*" the server; a thread may declare its role
// (SetThisThreadRole); any other thread gets the process's default role
// (SetDefaultRole), e.g. the server for gRPC C++'s unnamed threads when the
// gRPC C++ server shares the process with an h2rpc client.
//
// Under ASan or TSan (which interpose malloc themselves) nothing is counted
// and MallocCounterAvailable() is false.
enum class Role { kClient = 0, kServer = 1, kHarness = 2 };

struct AllocationCount {
  int64_t allocations = 0;
  int64_t bytes = 0;
};

bool MallocCounterAvailable();
void SetDefaultRole(Role role);
void SetThisThreadRole(Role role);
AllocationCount AllocationsOf(Role role);

}  // namespace h2rpc::benchmark

#endif  // H2RPC_BENCHMARK_MALLOC_COUNTER_H_
