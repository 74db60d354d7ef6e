#ifndef H2RPC_TEST_ABUSE_PROCESS_MEMORY_H_
#define H2RPC_TEST_ABUSE_PROCESS_MEMORY_H_

// The memory of this process, for tests that run an h2rpc server in-process
// and bound how much an attack makes it hold.

#include <cstdint>

namespace h2rpc::testing {

// Bytes this process holds now: its resident set (VmRSS from
// /proc/self/status) after glibc has handed its free pages back to the
// system (malloc_trim(0)); -1 if it cannot be read.
//
// glibc keeps freed memory in its arenas: a freed buffer of many MiB raises
// its mmap threshold (dynamically, up to 32 MiB), so later large buffers
// come from arena heaps, which are trimmed only from their top. Trimming
// first makes the figure what the program holds, not what glibc caches.
//
// Under ThreadSanitizer the resident set is mostly shadow memory (several
// bytes for every byte the program ever touched, kept after it is freed),
// so the figure is instead the sanitizer allocator's bytes in use. Under
// AddressSanitizer, freed memory waits, resident, in a quarantine (256 MB by
// default): a test binary shrinks it with its own __asan_default_options
// (see kAsanOptions).
int64_t ProcessMemoryBytes();

// For a test's __asan_default_options(), which must be defined in the test
// binary itself (ASan's runtime comes before any other library in symbol
// lookup): an 8 MB quarantine. Flags in ASAN_OPTIONS still apply on top.
inline constexpr char kAsanOptions[] = "quarantine_size_mb=8";

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_ABUSE_PROCESS_MEMORY_H_
