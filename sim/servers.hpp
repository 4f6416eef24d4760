// fusesim engine: slot pools (CUs/SMs), FIFO command queues (copy engines) and fixed-cost
// operation servers (NIC atomics, doorbells).
#pragma once

#include <deque>
#include <functional>
#include <string>

#include "sim/simulation.hpp"

namespace fusesim::sim {

/**
 * A pool of N identical slots (compute units / SMs). Work items ask for slots; a granted item holds
 * them until it calls release(). Requests are served first come, first served: a request for k
 * slots waits until k are free and blocks those behind it (in-order dispatch, like a GPU's
 * workgroup dispatcher).
 *
 * Errors: std::invalid_argument for N < 1, a request of 0 or more than N slots, or a release of more
 * slots than are held.
 */
class SlotPool {
 public:
  SlotPool(Simulation& sim, std::string name, int slots);
  /// Ask for k slots; on_grant(now) runs when they are held.
  void acquire(int k, std::function<void()> on_grant);
  /// Give k slots back (the next waiting requests are granted at the current time).
  void release(int k);
  /// Convenience: occupy k slots for `duration` seconds, then release and call on_done.
  void occupy(int k, Seconds duration, std::function<void()> on_done, const std::string& label = {});
  int free_slots() const { return free_; }
  int slots() const { return slots_; }
  const std::string& name() const { return name_; }
  /// Integral of busy slots over time (slot-seconds), for utilisation statistics.
  double busy_slot_seconds() const;

 private:
  void dispatch();
  struct Req { int k; std::function<void()> fn; };
  Simulation& sim_;
  std::string name_;
  int slots_, free_;
  std::deque<Req> waiting_;
  double busy_integral_ = 0;
  Seconds last_change_ = 0;
};

/**
 * A FIFO command queue (a copy engine's ring): commands run one at a time in submission order;
 * each pays `per_command_overhead` seconds before its body starts. A command's body is a function
 * that receives a completion callback and must call it exactly once (e.g. when its flow finishes).
 *
 * Errors: std::invalid_argument for a negative overhead.
 */
class CommandQueue {
 public:
  using Body = std::function<void(std::function<void()> done)>;
  CommandQueue(Simulation& sim, std::string name, Seconds per_command_overhead);
  /// Append a command; on_complete (optional) runs after the body reports done.
  void submit(std::string label, Body body, std::function<void()> on_complete = {});
  bool idle() const { return !running_ && pending_.empty(); }
  /// Commands submitted and not yet completed (the running one included).
  int outstanding() const { return int(pending_.size()) + (running_ ? 1 : 0); }
  long commands_completed() const { return completed_; }
  const std::string& name() const { return name_; }
  /// Call fn once the queue has finished everything submitted so far (immediately if idle).
  void when_idle(std::function<void()> fn);

 private:
  void start_next();
  struct Cmd { std::string label; Body body; std::function<void()> on_complete; };
  Simulation& sim_;
  std::string name_;
  Seconds overhead_;
  std::deque<Cmd> pending_;
  std::deque<std::function<void()>> idle_waiters_;
  bool running_ = false;
  long completed_ = 0;
};

/**
 * A server of discrete operations at a fixed cost each (a NIC's atomic unit, a doorbell): up to
 * `servers` operations in service at once, FIFO beyond that. Each operation takes `cost` seconds
 * of service.
 *
 * Errors: std::invalid_argument for servers < 1 or a negative cost.
 */
class OpServer {
 public:
  OpServer(Simulation& sim, std::string name, Seconds cost_per_op, int servers = 1);
  /// Submit one operation (optionally with its own cost); on_done runs when it has been served.
  void submit(std::function<void()> on_done, const std::string& label = {});
  void submit_cost(Seconds cost, std::function<void()> on_done, const std::string& label = {});
  long ops_served() const { return served_; }
  const std::string& name() const { return name_; }
  Seconds cost_per_op() const { return cost_; }

 private:
  void start_one();
  struct Op { Seconds cost; std::function<void()> fn; std::string label; };
  Simulation& sim_;
  std::string name_;
  Seconds cost_;
  int servers_, busy_ = 0;
  std::deque<Op> waiting_;
  long served_ = 0;
};

}  // namespace fusesim::sim
