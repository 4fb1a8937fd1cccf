#include "elastic_job/elastic_roster.h"

#include <algorithm>

namespace cohort::discovery {

std::string ElasticWorker::name() const {
  std::string where = slot.host + " slot " + std::to_string(slot.slot);
  if (!rank) return "worker " + std::to_string(id) + " (on " + where + ")";
  return "worker " + std::to_string(id) + " (rank " + std::to_string(*rank) + " on " + where + ")";
}

std::string ElasticWorker::label() const {
  return rank ? std::to_string(*rank) : "w" + std::to_string(id);
}

ElasticWorker& ElasticRoster::add(const SlotRef& slot) {
  int id = next_id_++;
  ElasticWorker& worker = workers_[id];
  worker.id = id;
  worker.slot = slot;
  return worker;
}

std::vector<const ElasticWorker*> ElasticRoster::of(const std::vector<int>& ids) const {
  std::vector<const ElasticWorker*> out;
  for (int id : ids) out.push_back(&workers_.at(id));
  return out;
}

ElasticWorker* ElasticRoster::find(int id) {
  auto it = workers_.find(id);
  return it == workers_.end() ? nullptr : &it->second;
}

bool ElasticRoster::others_running_on(const std::string& host, int id) const {
  return std::any_of(workers_.begin(), workers_.end(), [&](const auto& kv) {
    return kv.first != id && kv.second.running && kv.second.slot.host == host;
  });
}

std::vector<ElasticWorker*> ElasticRoster::wanted(const ElasticHosts& hosts, bool newcomers) {
  std::vector<ElasticWorker*> out;
  for (ElasticWorker* w : alive_in_order()) {
    if (hosts.usable(w->slot) && (newcomers || w->rank)) out.push_back(w);
  }
  return out;
}

std::vector<ElasticWorker*> ElasticRoster::alive_in_order() {
  std::vector<ElasticWorker*> ranked, fresh;
  for (auto& [id, w] : workers_) {
    if (!w.running || w.finished || w.leaving) continue;
    (w.rank ? ranked : fresh).push_back(&w);
  }
  std::stable_sort(
      ranked.begin(), ranked.end(),
      [](const ElasticWorker* a, const ElasticWorker* b) { return *a->rank < *b->rank; });
  ranked.insert(ranked.end(), fresh.begin(), fresh.end());
  return ranked;
}

std::vector<SlotRef> ElasticRoster::slots_of(const std::vector<ElasticWorker*>& workers) {
  std::vector<SlotRef> slots;
  for (const ElasticWorker* w : workers) slots.push_back(w->slot);
  return slots;
}

ElasticWorker* ElasticRoster::on_slot(const SlotRef& slot) {
  for (auto& [id, w] : workers_) {
    if (w.running && !w.leaving && !w.finished && w.slot == slot) return &w;
  }
  return nullptr;
}

}  // namespace cohort::discovery
