// State's registration, local restore, and the manifest the ranks compare.
#include "cohort/elastic/state.h"

#include "state/sampler_access.h"
#include "state/state_impl.h"

namespace cohort::elastic {
namespace detail {

std::string StateImpl::collective(std::string_view what) const {
  return "cohort.state/" + label + "/" + std::string(what);
}

SamplerCore& StateImpl::sampler(size_t index) const {
  return SamplerAccess::core(*samplers[index]);
}

namespace {

struct ManifestEntry {
  std::string name;
  uint8_t kind;
  std::string type;
  uint64_t size;
};

void write_entry(wire::Writer& out, const ManifestEntry& e) {
  out.str(e.name);
  out.u8(e.kind);
  out.str(e.type);
  out.u64(e.size);
}

std::vector<ManifestEntry> read_manifest(std::span<const std::byte> bytes) {
  wire::Reader in(bytes);
  std::vector<ManifestEntry> out(in.u64());
  for (auto& e : out) {
    e.name = in.str();
    e.kind = in.u8();
    e.type = in.str();
    e.size = in.u64();
  }
  if (!in.done()) throw wire::MalformedBytes("bytes left over after the manifest");
  return out;
}

std::string describe(const ManifestEntry& e) {
  std::string kind(to_string(static_cast<ValueKind>(e.kind)));
  if (e.kind == static_cast<uint8_t>(ValueKind::kObject)) return kind + " of type " + e.type;
  if (e.kind == static_cast<uint8_t>(ValueKind::kSampler)) {
    return kind + " over " + std::to_string(e.size) + " samples";
  }
  if (e.kind == static_cast<uint8_t>(ValueKind::kSharded)) {
    return kind + " of " + e.type + ", " + std::to_string(e.size) + " elements";
  }
  return kind + " of " + e.type + ", " + std::to_string(e.size) + " bytes";
}

}  // namespace

wire::Writer StateImpl::manifest() const {
  wire::Writer out;
  out.u64(entries.size());
  for (const Entry& e : entries) {
    ManifestEntry m{e.name, static_cast<uint8_t>(e.kind), "", 0};
    if (e.kind == ValueKind::kBuffer) {
      m.type = std::string(cohort::to_string(buffers[e.index].dtype()));
      m.size = buffers[e.index].num_bytes();
    } else if (e.kind == ValueKind::kObject) {
      m.type = objects[e.index].type_name();
    } else if (e.kind == ValueKind::kSharded) {
      m.type = std::string(cohort::to_string(sharded[e.index].dtype()));
      m.size = sharded[e.index].length();
    } else {
      m.size = sampler(e.index).dataset_size();
    }
    write_entry(out, m);
  }
  return out;
}

std::string manifest_difference(const StateImpl& state, std::span<const std::byte> theirs,
                                std::string_view who) {
  std::vector<ManifestEntry> a = read_manifest(state.manifest().bytes()), b = read_manifest(theirs);
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    if (i >= a.size()) return std::string(who) + " also tracks '" + b[i].name + "'";
    if (i >= b.size()) return "this rank also tracks '" + a[i].name + "'";
    if (a[i].name != b[i].name) {
      return "value " + std::to_string(i) + " is '" + a[i].name + "' here and '" + b[i].name +
             "' on " + std::string(who);
    }
    if (a[i].kind != b[i].kind || a[i].type != b[i].type || a[i].size != b[i].size) {
      return "'" + a[i].name + "' is a " + describe(a[i]) + " here and a " + describe(b[i]) +
             " on " + std::string(who);
    }
  }
  return "";
}

void restore_state(StateImpl& s) {
  if (!s.has_commit) throw InvalidArgument("restore: there is no commit or sync to return to");
  std::vector<std::function<void()>> assign;
  for (BufferValue& b : s.buffers) {
    if (!b.has_snapshot()) {
      throw InvalidArgument("restore: '" + b.name() + "' was tracked after the last commit");
    }
    b.live();  // checks the size before anything changes
  }
  for (const ObjectValue& o : s.objects) {
    if (!o.has_snapshot()) {
      throw InvalidArgument("restore: '" + o.name() + "' was tracked after the last commit");
    }
    assign.push_back(o.parse(o.snapshot(), "its last commit"));
  }
  for (BufferValue& b : s.buffers) b.restore_snapshot();
  for (auto& a : assign) a();
  for (size_t i = 0; i < s.samplers.size(); ++i) s.sampler(i).rollback();
  for (ShardedValue& v : s.sharded) v.restore(s.commit_count);
  s.restored = true;
}

void step_back_state(StateImpl& s) {
  if (!s.previous) return;
  std::vector<std::function<void()>> assign;
  for (ObjectValue& o : s.objects) assign.push_back(o.stage_step_back());
  for (BufferValue& b : s.buffers) b.step_back();
  for (auto& a : assign) a();
  for (size_t i = 0; i < s.samplers.size(); ++i) s.sampler(i).load(s.previous->samplers[i]);
  s.commit_count = s.previous->commit_count;
  s.previous.reset();
}

}  // namespace detail

namespace {

// Also forgets a restore: the new value has no commit to be restored to.
void check_new_name(detail::StateImpl& s, const std::string& name) {
  if (name.empty()) throw InvalidArgument("State::track: a tracked value needs a name");
  for (const auto& e : s.entries) {
    if (e.name == name) throw InvalidArgument("State::track: '" + name + "' is already tracked");
  }
  s.restored = false;
}

}  // namespace

State::State(std::string label) : impl_(std::make_unique<detail::StateImpl>()) {
  if (label.empty()) throw InvalidArgument("State: the label must not be empty");
  impl_->label = std::move(label);
}

State::~State() = default;

void State::track_buffer(std::string name, DataType dtype,
                         std::function<std::span<std::byte>()> view, ValueScope scope) {
  check_new_name(*impl_, name);
  impl_->buffers.emplace_back(name, dtype, std::move(view), scope);
  impl_->entries.push_back(
      {std::move(name), detail::ValueKind::kBuffer, impl_->buffers.size() - 1});
}

void State::track_bytes(std::string name, std::string type_tag, std::function<std::string()> save,
                        std::function<std::function<void()>(std::string_view)> parse,
                        ValueScope scope) {
  if (!save || !parse) throw InvalidArgument("State::track_bytes('" + name + "'): empty callback");
  track_object(std::move(name), {std::move(type_tag), scope, std::move(save), std::move(parse)});
}

void State::track_object(std::string name, detail::ObjectAccess access) {
  check_new_name(*impl_, name);
  impl_->objects.emplace_back(name, std::move(access));
  impl_->entries.push_back(
      {std::move(name), detail::ValueKind::kObject, impl_->objects.size() - 1});
}

void State::track(std::string name, detail::ShardStorage& buffer) {
  check_new_name(*impl_, name);
  if (buffer.length() == 0) {
    throw InvalidArgument("State::track: sharded value '" + name + "' has no elements");
  }
  impl_->sharded.emplace_back(name, buffer);
  impl_->entries.push_back(
      {std::move(name), detail::ValueKind::kSharded, impl_->sharded.size() - 1});
}

void State::track(std::string name, ElasticSampler& sampler) {
  check_new_name(*impl_, name);
  for (ElasticSampler* s : impl_->samplers) {
    if (s == &sampler) throw InvalidArgument("State::track: this sampler is already tracked");
  }
  impl_->samplers.push_back(&sampler);
  impl_->entries.push_back(
      {std::move(name), detail::ValueKind::kSampler, impl_->samplers.size() - 1});
}

void State::commit() {
  detail::commit_state(*impl_);
}
void State::restore() {
  detail::restore_state(*impl_);
}
void State::sync() {
  detail::sync_state(*impl_, false);
}

void State::add_reset_callback(std::function<void()> callback) {
  impl_->reset_callbacks.push_back(std::move(callback));
}

void State::run_reset_callbacks() {
  for (auto& callback : impl_->reset_callbacks) callback();
}

void State::set_commit_hook(std::function<void()> hook) {
  impl_->commit_hook = std::move(hook);
}

const std::string& State::label() const {
  return impl_->label;
}
uint64_t State::commit_count() const {
  return impl_->commit_count;
}

uint64_t State::last_reshard_bytes() const {
  return impl_->reshard_bytes;
}

const std::vector<std::string>& State::last_sync_kept() const {
  return impl_->kept_by_last_sync;
}

uint64_t State::samples_committed() const {
  uint64_t total = 0;
  for (const ElasticSampler* s : impl_->samplers) {
    total += s->epoch() * s->dataset_size() + (s->dataset_size() - s->unprocessed());
  }
  return total;
}
bool State::has_commit() const {
  return impl_->has_commit;
}

std::vector<std::string> State::names() const {
  std::vector<std::string> out;
  for (const auto& e : impl_->entries) out.push_back(e.name);
  return out;
}

}  // namespace cohort::elastic
