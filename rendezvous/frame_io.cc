#include "rendezvous/frame_io.h"

#include "rendezvous/hmac.h"

namespace cohort::rendezvous {
namespace {

// Distinguishes a header's MAC from any other MAC made with the job secret.
constexpr std::string_view kHeaderLabel = "cohort signed frame header v1";
constexpr size_t kSignedPart = kSignedHeaderSize - kMacSize;

void put_be(std::string& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

uint64_t get_be(std::string_view in, size_t pos, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(in[pos + i]);
  return v;
}

std::string header_mac(std::string_view secret, std::string_view signed_part) {
  std::string data(kHeaderLabel);
  data += signed_part;
  return hmac_sha256(secret, data);
}

}  // namespace

std::string signed_header(std::string_view secret, uint32_t payload_size, int64_t timestamp_ms,
                          std::string_view nonce) {
  std::string header;
  put_be(header, payload_size, 4);
  put_be(header, static_cast<uint64_t>(timestamp_ms), 8);
  header += nonce.substr(0, 16);
  header.resize(kSignedPart, '\0');
  return header + header_mac(secret, header);
}

void write_signed_frame(int fd, std::string_view secret, std::string_view payload,
                        Clock::time_point deadline, int64_t timestamp_ms, std::string_view nonce) {
  std::string out =
      signed_header(secret, static_cast<uint32_t>(payload.size()), timestamp_ms, nonce);
  out += payload;
  net::write_all(fd, out, deadline);
}

SignedHeader open_signed_header(std::string_view secret, std::string_view header, size_t max_size) {
  if (header.size() != kSignedHeaderSize) throw net::FrameError("truncated frame header");
  std::string_view signed_part = header.substr(0, kSignedPart);
  if (!constant_time_equal(header_mac(secret, signed_part), header.substr(kSignedPart))) {
    throw net::FrameError("frame header with a wrong MAC (not signed with the job secret)");
  }
  SignedHeader out{.length = static_cast<uint32_t>(get_be(header, 0, 4)),
                   .timestamp_ms = static_cast<int64_t>(get_be(header, 4, 8)),
                   .nonce = std::string(header.substr(12, 16))};
  if (out.length > max_size) {
    throw net::FrameError("frame of " + std::to_string(out.length) +
                          " bytes exceeds the limit of " + std::to_string(max_size));
  }
  return out;
}

}  // namespace cohort::rendezvous
