// The launcher's in-process Store over its own server: the same keys its clients see, without a
// connection.
#include "rendezvous/server.h"

namespace cohort::rendezvous {
namespace {

class ServerStore final : public Store {
 public:
  ServerStore(RendezvousServer& server, std::string scope)
      : server_(server), scope_(std::move(scope)) {}

  void set(const std::string& key, const std::string& value, const Cancellation*) override {
    server_.set(key, value, scope_);
  }
  std::string get(const std::string& key, std::chrono::milliseconds wait,
                  const Cancellation* cancel) override {
    return server_.get(key, scope_, wait, cancel);
  }
  std::optional<std::string> lookup(const std::string& key, const Cancellation*) override {
    return server_.lookup(key, scope_);
  }
  bool compare_and_set(const std::string& key, const std::optional<std::string>& expected,
                       const std::string& desired, const Cancellation*) override {
    return server_.compare_and_set(key, expected, desired, scope_);
  }
  bool remove(const std::string& key, const Cancellation*) override {
    return server_.remove(key, scope_);
  }
  std::string describe() const override {
    return "this launcher's rendezvous server (port " + std::to_string(server_.port()) + ")";
  }

 private:
  RendezvousServer& server_;
  const std::string scope_;
};

}  // namespace

std::unique_ptr<Store> RendezvousServer::store(std::string scope) {
  return std::make_unique<ServerStore>(*this, std::move(scope));
}

}  // namespace cohort::rendezvous
