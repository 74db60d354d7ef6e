// A main() for fuzz targets under `bazel test`: feeds LLVMFuzzerTestOneInput
// every file of the corpus directories given as arguments, then a fixed
// number of deterministic mutations of them (byte flips, truncations,
// insertions, splices) and random inputs. Crashes and sanitizer reports fail
// the test; coverage-guided fuzzing is the _libfuzzer binary's job.
#include <dirent.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

constexpr int kGeneratedInputs = 20000;
constexpr size_t kMaxGeneratedSize = 4096;

std::vector<std::string> ReadCorpus(const char* dir) {
  std::vector<std::string> inputs;
  DIR* d = opendir(dir);
  if (d == nullptr) {
    std::fprintf(stderr, "cannot open corpus directory %s\n", dir);
    return inputs;
  }
  while (dirent* entry = readdir(d)) {
    if (entry->d_name[0] == '.') continue;
    std::ifstream file(std::string(dir) + "/" + entry->d_name,
                       std::ios::binary);
    inputs.emplace_back(std::istreambuf_iterator<char>(file),
                        std::istreambuf_iterator<char>());
  }
  closedir(d);
  return inputs;
}

void Run(const std::string& input) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()),
                         input.size());
}

std::string Mutate(std::string input, const std::vector<std::string>& corpus,
                   std::mt19937& rng) {
  const int mutations = 1 + rng() % 4;
  for (int i = 0; i < mutations; ++i) {
    switch (rng() % 5) {
      case 0:  // flip a byte
        if (!input.empty()) input[rng() % input.size()] ^= 1 + rng() % 255;
        break;
      case 1:  // truncate
        if (!input.empty()) input.resize(rng() % input.size());
        break;
      case 2:  // insert random bytes
        input.insert(input.empty() ? 0 : rng() % input.size(),
                     std::string(1 + rng() % 8, static_cast<char>(rng())));
        break;
      case 3:  // splice another input
        if (!corpus.empty()) input += corpus[rng() % corpus.size()];
        break;
      case 4:  // set a byte to an interesting value
        if (!input.empty()) {
          static const char kValues[] = {0,   1,   '\x7f', '\x80', '\xff',
                                         ',', '=', '%',    ':',    '-'};
          input[rng() % input.size()] = kValues[rng() % sizeof(kValues)];
        }
        break;
    }
    if (input.size() > kMaxGeneratedSize) input.resize(kMaxGeneratedSize);
  }
  return input;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> corpus;
  for (int i = 1; i < argc; ++i) {
    std::vector<std::string> more = ReadCorpus(argv[i]);
    corpus.insert(corpus.end(), more.begin(), more.end());
  }
  for (const std::string& input : corpus) Run(input);
  std::mt19937 rng(20261202);
  for (int i = 0; i < kGeneratedInputs; ++i) {
    if (!corpus.empty() && i % 4 != 0) {
      Run(Mutate(corpus[rng() % corpus.size()], corpus, rng));
    } else {
      std::string input(rng() % 256, '\0');
      for (char& c : input) c = static_cast<char>(rng());
      Run(input);
    }
  }
  std::printf("replayed %zu corpus inputs and %d generated inputs\n",
              corpus.size(), kGeneratedInputs);
  return 0;
}
