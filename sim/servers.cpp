#include "sim/servers.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "sim/trace.hpp"

namespace fusesim::sim {

SlotPool::SlotPool(Simulation& sim, std::string name, int slots)
    : sim_(sim), name_(std::move(name)), slots_(slots), free_(slots) {
  if (slots < 1) throw std::invalid_argument(fmt::format("slot pool '{}': needs >= 1 slot, got {}", name_, slots));
}

double SlotPool::busy_slot_seconds() const {
  return busy_integral_ + (slots_ - free_) * (sim_.now() - last_change_);
}

void SlotPool::acquire(int k, std::function<void()> on_grant) {
  if (k < 1 || k > slots_)
    throw std::invalid_argument(fmt::format("slot pool '{}': request of {} slots (pool has {})", name_, k, slots_));
  waiting_.push_back(Req{k, std::move(on_grant)});
  dispatch();
}

void SlotPool::release(int k) {
  if (k < 1 || free_ + k > slots_)
    throw std::invalid_argument(fmt::format("slot pool '{}': release of {} slots, only {} held", name_, k, slots_ - free_));
  busy_integral_ += (slots_ - free_) * (sim_.now() - last_change_);
  last_change_ = sim_.now();
  free_ += k;
  dispatch();
}

void SlotPool::dispatch() {
  while (!waiting_.empty() && waiting_.front().k <= free_) {
    Req r = std::move(waiting_.front());
    waiting_.pop_front();
    busy_integral_ += (slots_ - free_) * (sim_.now() - last_change_);
    last_change_ = sim_.now();
    free_ -= r.k;
    r.fn();
  }
}

void SlotPool::occupy(int k, Seconds duration, std::function<void()> on_done, const std::string& label) {
  if (duration < 0) throw std::invalid_argument(fmt::format("slot pool '{}': negative duration", name_));
  acquire(k, [this, k, duration, on_done = std::move(on_done), label] {
    const Seconds t0 = sim_.now();
    sim_.after(duration, [this, k, t0, on_done, label] {
      if (auto* tr = sim_.trace(); tr && !label.empty()) tr->slice(name_, label, t0, sim_.now(), {{"slots", k}});
      release(k);
      if (on_done) on_done();
    });
  });
}

CommandQueue::CommandQueue(Simulation& sim, std::string name, Seconds per_command_overhead)
    : sim_(sim), name_(std::move(name)), overhead_(per_command_overhead) {
  if (per_command_overhead < 0)
    throw std::invalid_argument(fmt::format("command queue '{}': negative per-command overhead", name_));
}

void CommandQueue::submit(std::string label, Body body, std::function<void()> on_complete) {
  pending_.push_back(Cmd{std::move(label), std::move(body), std::move(on_complete)});
  if (!running_) start_next();
}

void CommandQueue::when_idle(std::function<void()> fn) {
  if (idle()) fn();
  else idle_waiters_.push_back(std::move(fn));
}

void CommandQueue::start_next() {
  if (pending_.empty()) {
    running_ = false;
    while (!idle_waiters_.empty()) {
      auto fn = std::move(idle_waiters_.front());
      idle_waiters_.pop_front();
      fn();
      if (!idle()) break;  // a waiter submitted more work
    }
    return;
  }
  running_ = true;
  auto cmd = std::make_shared<Cmd>(std::move(pending_.front()));
  pending_.pop_front();
  const Seconds t0 = sim_.now();
  sim_.after(overhead_, [this, cmd, t0] {
    cmd->body([this, cmd, t0] {
      ++completed_;
      if (auto* tr = sim_.trace()) tr->slice(name_, cmd->label, t0, sim_.now());
      if (cmd->on_complete) cmd->on_complete();
      start_next();
    });
  });
}

OpServer::OpServer(Simulation& sim, std::string name, Seconds cost_per_op, int servers)
    : sim_(sim), name_(std::move(name)), cost_(cost_per_op), servers_(servers) {
  if (servers < 1) throw std::invalid_argument(fmt::format("op server '{}': needs >= 1 server", name_));
  if (cost_per_op < 0) throw std::invalid_argument(fmt::format("op server '{}': negative cost", name_));
}

void OpServer::submit(std::function<void()> on_done, const std::string& label) {
  submit_cost(cost_, std::move(on_done), label);
}

void OpServer::submit_cost(Seconds cost, std::function<void()> on_done, const std::string& label) {
  if (cost < 0) throw std::invalid_argument(fmt::format("op server '{}': negative cost", name_));
  waiting_.push_back(Op{cost, std::move(on_done), label});
  start_one();
}

void OpServer::start_one() {
  while (busy_ < servers_ && !waiting_.empty()) {
    Op op = std::move(waiting_.front());
    waiting_.pop_front();
    ++busy_;
    const Seconds t0 = sim_.now();
    sim_.after(op.cost, [this, op = std::move(op), t0] {
      --busy_;
      ++served_;
      if (auto* tr = sim_.trace(); tr && !op.label.empty()) tr->slice(name_, op.label, t0, sim_.now());
      if (op.fn) op.fn();
      start_one();
    });
  }
}

}  // namespace fusesim::sim
