#include "benchmark/tls_credentials.h"

#include <limits.h>
#include <stdlib.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace h2rpc::benchmark {
namespace {

// The testdata's path inside the workspace, and the workspace's name
// (WORKSPACE), which is its directory in a runfiles tree.
constexpr char kTestdataPath[] = "test/interop/testdata";
constexpr char kWorkspace[] = "h2rpc";
constexpr const char* kFiles[] = {"ca.pem", "server1.key", "server1.pem"};

// The whole file, or false with the system's reason in `*error`.
bool ReadFile(const std::string& path, std::string* contents,
              std::string* error) {
  FILE* in = std::fopen(path.c_str(), "rb");
  if (in == nullptr) {
    *error = absl::StrCat(path, ": ", std::strerror(errno));
    return false;
  }
  std::string data;
  char buffer[8192];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), in)) > 0) {
    data.append(buffer, n);
  }
  const bool failed = std::ferror(in) != 0;
  const int read_errno = errno;
  std::fclose(in);
  if (failed) {
    *error = absl::StrCat(path, ": ", std::strerror(read_errno));
    return false;
  }
  if (data.empty()) {
    *error = absl::StrCat(path, ": empty");
    return false;
  }
  *contents = std::move(data);
  return true;
}

bool ReadAll(const std::string& dir, TlsCredentialFiles* files,
             std::string* error) {
  std::string* const contents[] = {&files->ca_pem, &files->server_key,
                                   &files->server_cert};
  for (size_t i = 0; i < 3; ++i) {
    if (!ReadFile(absl::StrCat(dir, "/", kFiles[i]), contents[i], error)) {
      return false;
    }
  }
  char resolved[PATH_MAX];
  files->dir = realpath(dir.c_str(), resolved) != nullptr ? resolved : dir;
  return true;
}

}  // namespace

std::vector<std::string> DefaultTlsCredentialDirs() {
  std::vector<std::string> dirs;
  const std::string in_runfiles = absl::StrCat(kWorkspace, "/", kTestdataPath);
  if (const char* runfiles = std::getenv("RUNFILES_DIR");
      runfiles != nullptr && runfiles[0] != '\0') {
    dirs.push_back(absl::StrCat(runfiles, "/", in_runfiles));
  }
  char exe[PATH_MAX];
  if (realpath("/proc/self/exe", exe) != nullptr) {
    dirs.push_back(absl::StrCat(exe, ".runfiles/", in_runfiles));
  }
  dirs.push_back(kTestdataPath);
  return dirs;
}

bool LoadTlsCredentialFiles(const std::string& dir, TlsCredentialFiles* files,
                            std::string* error) {
  const char* const what =
      "gRPC's interop test credentials ca.pem, server1.key and server1.pem "
      "(the workspace's test/interop/testdata)";
  if (!dir.empty()) {
    std::string why;
    if (ReadAll(dir, files, &why)) return true;
    *error = absl::StrCat("--secure: cannot read ", what, " from ",
                          "--tls_credentials_dir=", dir, ": ", why);
    return false;
  }
  std::vector<std::string> tried;
  for (const std::string& candidate : DefaultTlsCredentialDirs()) {
    std::string why;
    if (ReadAll(candidate, files, &why)) return true;
    tried.push_back(why);
  }
  *error = absl::StrCat("--secure: cannot find ", what, " (tried ",
                        absl::StrJoin(tried, "; "),
                        "); pass --tls_credentials_dir=DIR");
  return false;
}

}  // namespace h2rpc::benchmark
