#ifndef H2RPC_RPC_INTERNAL_COMMON_MEMBER_TASK_H_
#define H2RPC_RPC_INTERNAL_COMMON_MEMBER_TASK_H_

#include "transport/io/event_loop.h"

namespace h2rpc::internal {

// A task that calls a member function: an intrusive, allocation-free way for
// a call object to run a step on its loop.
template <class T, void (T::*kRun)()>
class MemberTask : public transport::io::Task {
 public:
  explicit MemberTask(T* object) : object_(object) {}
  void Run() override { (object_->*kRun)(); }

 private:
  T* object_;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_COMMON_MEMBER_TASK_H_
