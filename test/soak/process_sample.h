#ifndef H2RPC_TEST_SOAK_PROCESS_SAMPLE_H_
#define H2RPC_TEST_SOAK_PROCESS_SAMPLE_H_

#include <sys/types.h>

#include <cstdint>

namespace h2rpc::testing {

// A process's resources at one moment, from /proc. A field is -1 when it
// could not be read (the process has ended).
struct ProcessSample {
  int64_t rss_bytes = -1;  // VmRSS
  int threads = -1;        // entries of /proc/<pid>/task
  int fds = -1;            // entries of /proc/<pid>/fd
};

// Another process (a child of this one).
ProcessSample SampleProcess(pid_t pid);
// This process, with the memory measured as ProcessMemoryBytes() does
// (test/abuse/process_memory.h: after malloc_trim; the sanitizer
// allocator's bytes in use under ThreadSanitizer).
ProcessSample SampleSelf();

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_SOAK_PROCESS_SAMPLE_H_
