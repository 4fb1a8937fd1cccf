#include "ops/shm_segment.h"

#include <poll.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "base/fd.h"
#include "base/log.h"
#include "cohort/errors.h"

namespace cohort::ops {
namespace {

using namespace std::chrono_literals;

// What a connecting rank sends: its local rank, then the token.
struct Hello {
  int32_t local_rank;
  std::array<unsigned char, 32> token;
};

// A client that connected gets this long to say hello, so that a stray connection cannot hold
// local rank 0 until the deadline.
constexpr auto kHelloTime = 2s;

[[noreturn]] void fail_errno(const std::string& what) {
  throw InternalError("shared memory: " + what + ": " + std::strerror(errno));
}

sockaddr_un meeting_address(const ShmRendezvous& meet, socklen_t& length) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string name = "cohort-shm-";
  for (unsigned char byte : meet.name) {
    name += kHex[byte >> 4];
    name += kHex[byte & 15];
  }
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  // Abstract namespace: a leading NUL, no file, and the name is released with the socket.
  std::memcpy(address.sun_path + 1, name.data(), name.size());
  length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return address;
}

// Waits for `events` on `fd` until `deadline`; false on the deadline. Throws once `cancel` fires.
bool wait_for(int fd, short events, SteadyClock::time_point deadline, const Cancellation* cancel) {
  for (;;) {
    pollfd fds[2] = {{fd, events, 0}, {cancel_fd(cancel), POLLIN, 0}};
    int ready = ::poll(fds, 2, poll_millis(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) fail_errno("poll");
    throw_if_cancelled(cancel);
    return ready > 0;
  }
}

std::byte* map(int fd, size_t bytes) {
  void* data = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) fail_errno("mmap of " + std::to_string(bytes) + " bytes");
  return static_cast<std::byte*>(data);
}

// One byte of payload with room for one descriptor beside it (SCM_RIGHTS), for both directions.
// It points into itself, so it stays where it was made.
struct DescriptorMessage {
  char byte = 1;
  iovec io{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};

  DescriptorMessage() {
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
  }
  DescriptorMessage(const DescriptorMessage&) = delete;
  DescriptorMessage& operator=(const DescriptorMessage&) = delete;
};

void send_descriptor(int socket, int fd) {
  DescriptorMessage m;
  cmsghdr* header = CMSG_FIRSTHDR(&m.message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(header), &fd, sizeof(int));
  if (::sendmsg(socket, &m.message, MSG_NOSIGNAL) != 1) fail_errno("passing the segment");
}

Fd receive_descriptor(int socket) {
  DescriptorMessage m;
  ssize_t got = ::recvmsg(socket, &m.message, MSG_CMSG_CLOEXEC);
  if (got < 0) fail_errno("receiving the segment from local rank 0");
  cmsghdr* header = CMSG_FIRSTHDR(&m.message);
  if (got != 1 || !header || header->cmsg_type != SCM_RIGHTS) {
    throw InternalError("shared memory: local rank 0 closed the connection without the segment");
  }
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(header), sizeof(int));
  return Fd(fd);
}

// Reads a client's hello within kHelloTime and checks who it is; the local rank it claims, or -1
// (logged) for a connection to refuse.
int greet(int client, const ShmRendezvous& meet, int local_size, const Cancellation* cancel) {
  ucred peer{};
  socklen_t length = sizeof(peer);
  if (::getsockopt(client, SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0) return -1;
  if (peer.uid != ::getuid()) {
    log::warning("shared memory: refused a connection from pid ", peer.pid, " of user ", peer.uid);
    return -1;
  }
  Hello hello{};
  size_t got = 0;
  auto deadline = SteadyClock::now() + kHelloTime;
  while (got < sizeof(hello)) {
    if (!wait_for(client, POLLIN, deadline, cancel)) break;
    ssize_t n = ::recv(client, reinterpret_cast<char*>(&hello) + got, sizeof(hello) - got, 0);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  bool token_ok = got == sizeof(hello) && hello.token == meet.token;
  if (!token_ok || hello.local_rank < 1 || hello.local_rank >= local_size) {
    log::warning("shared memory: refused a connection from pid ", peer.pid,
                 token_ok ? " claiming a local rank out of range" : " without the job's token");
    return -1;
  }
  return hello.local_rank;
}

std::string missing_ranks(const std::vector<bool>& joined) {
  std::string names;
  for (size_t r = 0; r < joined.size(); ++r) {
    if (!joined[r]) names += (names.empty() ? "" : ", ") + std::to_string(r);
  }
  return names;
}

// Connects to local rank 0's socket, retrying while it is not listening yet.
Fd connect_to_leader(const ShmRendezvous& meet, SteadyClock::time_point deadline,
                     const Cancellation* cancel) {
  socklen_t length = 0;
  sockaddr_un address = meeting_address(meet, length);
  auto backoff = 1ms;
  for (;;) {
    Fd socket(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!socket.valid()) fail_errno("socket");
    if (::connect(socket.get(), reinterpret_cast<sockaddr*>(&address), length) == 0) {
      return socket;
    }
    if (errno != ECONNREFUSED && errno != ENOENT && errno != EAGAIN) fail_errno("connect");
    auto wake = std::min(deadline, SteadyClock::now() + backoff);
    wait_for(-1, 0, wake, cancel);  // sleeps, unless cancelled
    if (SteadyClock::now() >= deadline) {
      throw InternalError("shared memory: local rank 0 did not listen before the timeout");
    }
    backoff = std::min(backoff * 2, std::chrono::milliseconds(50));
  }
}

}  // namespace

ShmRendezvous ShmRendezvous::random() {
  ShmRendezvous meet;
  for (auto* bytes : {meet.name.data(), meet.token.data()}) {
    size_t size = bytes == meet.name.data() ? meet.name.size() : meet.token.size();
    if (::getrandom(bytes, size, 0) != static_cast<ssize_t>(size)) fail_errno("getrandom");
  }
  return meet;
}

ShmSegment ShmSegment::create(const ShmRendezvous& meet, int local_size, size_t bytes,
                              SteadyClock::time_point deadline, const Cancellation* cancel,
                              const char* label) {
  Fd memory(::memfd_create(label, MFD_CLOEXEC));
  if (!memory.valid()) fail_errno("memfd_create");
  if (::ftruncate(memory.get(), static_cast<off_t>(bytes)) != 0) {
    fail_errno("sizing the segment to " + std::to_string(bytes) + " bytes");
  }
  ShmSegment segment(map(memory.get(), bytes), bytes);
  if (local_size == 1) return segment;

  socklen_t length = 0;
  sockaddr_un address = meeting_address(meet, length);
  Fd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!listener.valid()) fail_errno("socket");
  if (::bind(listener.get(), reinterpret_cast<sockaddr*>(&address), length) != 0) {
    fail_errno("binding the meeting socket");
  }
  if (::listen(listener.get(), local_size) != 0) fail_errno("listen");

  std::vector<bool> joined(local_size, false);
  joined[0] = true;
  for (int waiting = local_size - 1; waiting > 0;) {
    if (!wait_for(listener.get(), POLLIN, deadline, cancel)) {
      throw InternalError("shared memory: local ranks " + missing_ranks(joined) +
                          " did not connect to local rank 0 before the timeout");
    }
    Fd client(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!client.valid()) continue;  // the connection went away in between
    int rank = greet(client.get(), meet, local_size, cancel);
    if (rank < 0) continue;
    if (joined[rank]) {
      log::warning("shared memory: local rank ", rank, " connected twice; refused the second");
      continue;
    }
    send_descriptor(client.get(), memory.get());
    joined[rank] = true;
    --waiting;
  }
  return segment;
}

ShmSegment ShmSegment::open(const ShmRendezvous& meet, int local_rank,
                            SteadyClock::time_point deadline, const Cancellation* cancel) {
  Fd socket = connect_to_leader(meet, deadline, cancel);
  Hello hello{local_rank, meet.token};
  if (::send(socket.get(), &hello, sizeof(hello), MSG_NOSIGNAL) != sizeof(hello)) {
    fail_errno("greeting local rank 0");
  }
  if (!wait_for(socket.get(), POLLIN, deadline, cancel)) {
    throw InternalError("shared memory: local rank 0 did not pass the segment before the timeout");
  }
  Fd memory = receive_descriptor(socket.get());
  struct stat status {};
  if (::fstat(memory.get(), &status) != 0) fail_errno("fstat of the segment");
  auto bytes = static_cast<size_t>(status.st_size);
  return ShmSegment(map(memory.get(), bytes), bytes);
}

ShmSegment::ShmSegment(ShmSegment&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    if (data_) ::munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

ShmSegment::~ShmSegment() {
  if (data_) ::munmap(data_, size_);
}

}  // namespace cohort::ops
