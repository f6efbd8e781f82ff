// Standalone driver for fuzz targets when libFuzzer is not available: feeds
// the target its seeds, random mutations of them, and random byte strings,
// deterministically from a fixed seed. Usage:
//   <target> [--iterations=N] [--seed=S] [--write-corpus=DIR] [FILE...]
// FILE arguments are replayed as-is (crash reproducers).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// Each target defines its seeds: valid encodings that mutations start from.
void VigilFuzzSeeds(std::vector<std::string>* out);

namespace {
std::string Mutate(std::string s, std::mt19937_64& rng) {
  int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    switch (rng() % 5) {
      case 0:
        if (!s.empty()) s[rng() % s.size()] ^= static_cast<char>(1u << (rng() % 8));
        break;
      case 1:
        if (!s.empty()) s.resize(rng() % s.size());
        break;
      case 2:
        s.insert(s.begin() + static_cast<long>(s.empty() ? 0 : rng() % s.size()), static_cast<char>(rng()));
        break;
      case 3:
        if (!s.empty()) s[rng() % s.size()] = static_cast<char>(rng());
        break;
      case 4:
        if (s.size() >= 8) {
          size_t pos = rng() % (s.size() - 7);
          uint64_t v = rng() % 3 == 0 ? ~0ull : rng();
          std::memcpy(&s[pos], &v, 8);
        }
        break;
    }
  }
  return s;
}
}  // namespace

int main(int argc, char** argv) {
  long iterations = 2000;
  uint64_t seed = 12345;
  std::string corpus_dir;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--iterations=", 0) == 0)
      iterations = std::atol(a.c_str() + 13);
    else if (a.rfind("--seed=", 0) == 0)
      seed = std::strtoull(a.c_str() + 7, nullptr, 10);
    else if (a.rfind("--write-corpus=", 0) == 0)
      corpus_dir = a.substr(15);
    else
      files.push_back(a);
  }
  std::vector<std::string> seeds;
  VigilFuzzSeeds(&seeds);
  if (!corpus_dir.empty()) {
    for (size_t i = 0; i < seeds.size(); ++i) {
      std::ofstream f(corpus_dir + "/seed-" + std::to_string(i), std::ios::binary);
      f << seeds[i];
    }
    return 0;
  }
  for (const auto& path : files) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    std::string s = ss.str();
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  }
  if (!files.empty()) return 0;
  std::mt19937_64 rng(seed);
  for (const auto& s : seeds) LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  for (long i = 0; i < iterations; ++i) {
    std::string input;
    if (!seeds.empty() && rng() % 8 != 0) {
      input = Mutate(seeds[rng() % seeds.size()], rng);
    } else {
      input.resize(rng() % 512);
      for (auto& c : input) c = static_cast<char>(rng());
    }
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  }
  std::printf("fuzz driver: %ld inputs plus %zu seeds, no crash\n", iterations, seeds.size());
  return 0;
}
