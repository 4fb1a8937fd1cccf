// broadcast_bytes and allgather_bytes: strings of bytes through the tensor collectives, a size
// first and then the bytes, for the framework adapters' object collectives.
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cohort/cohort.h"

namespace cohort {

std::string broadcast_bytes(std::string bytes, int root, std::string name, ProcessSet set) {
  int64_t size = static_cast<int64_t>(bytes.size());
  broadcast(name + ".size", Tensor::of(std::span<int64_t>(&size, 1)), root, set);
  bytes.resize(static_cast<size_t>(size));
  if (size > 0)
    broadcast(name + ".bytes", Tensor{bytes.data(), DataType::kUInt8, {size}}, root, set);
  return bytes;
}

std::vector<std::string> allgather_bytes(std::string bytes, std::string name, ProcessSet set) {
  int64_t size = static_cast<int64_t>(bytes.size());
  OwnedTensor sizes = allgather(name + ".sizes", Tensor::of(std::span<int64_t>(&size, 1)), set);
  std::span<const int64_t> each = sizes.as<int64_t>();
  int64_t total = 0;
  for (int64_t n : each) total += n;
  std::vector<std::string> result(each.size());
  if (total == 0) return result;
  char empty = 0;  // a rank with nothing to send still passes valid memory
  Tensor mine{size > 0 ? bytes.data() : &empty, DataType::kUInt8, {size}};
  OwnedTensor all = allgather(name + ".bytes", mine, set);
  const char* p = reinterpret_cast<const char*>(all.bytes.data());
  for (size_t r = 0; r < each.size(); ++r) {
    result[r].assign(p, static_cast<size_t>(each[r]));
    p += each[r];
  }
  return result;
}

}  // namespace cohort
