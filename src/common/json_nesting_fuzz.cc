// Fuzz target for the JSON a request body or row brings: the nesting check, then
// what the server does with a document that passes it (parse, canonical dump
// for the request fingerprint, destruction). Nothing may crash, and a document
// the check passes never nests past the bound.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/common/bounds.h"
#include "vigil/common/json_nesting.h"

namespace {

int DepthOf(const nlohmann::json& j) {
  int deepest = 0;
  std::vector<std::pair<const nlohmann::json*, int>> stack{{&j, 0}};
  while (!stack.empty()) {
    auto [node, depth] = stack.back();
    stack.pop_back();
    if (!node->is_structured()) continue;
    deepest = std::max(deepest, depth + 1);
    for (const auto& child : *node) stack.emplace_back(&child, depth + 1);
  }
  return deepest;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (!vigil::CheckJsonNesting(text, vigil::bounds::kMaxJsonDepth, "the body").ok()) return 0;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return 0;
  if (DepthOf(j) > vigil::bounds::kMaxJsonDepth) std::abort();
  (void)j.dump();
  return 0;
}

void VigilFuzzSeeds(std::vector<std::string>* out) {
  out->push_back(std::string(65, '[') + std::string(65, ']'));
  out->push_back(std::string(64, '[') + std::string(64, ']'));
  std::string objects;
  for (int i = 0; i < 63; ++i) objects += "{\"k\":";
  out->push_back(objects + "\"[[[[\\\"\"" + std::string(63, '}'));
  std::string wide = "{";
  for (int i = 0; i < 500; ++i) wide += "\"k" + std::to_string(i) + "\":[1,{\"a\":[]}],";
  out->push_back(wide + "\"end\":null}");
  out->push_back("{\"sql\": \"SELECT 1\", \"script\": true}");
}
