#ifndef H2RPC_RPC_INTERNAL_CONTEXT_LINK_H_
#define H2RPC_RPC_INTERNAL_CONTEXT_LINK_H_

#include "absl/time/time.h"

namespace h2rpc {
class ClientContext;
class ServerContext;
}  // namespace h2rpc

namespace h2rpc::internal {

// The links from a ServerContext to the ClientContexts made from it that
// inherit its cancellation: an intrusive list through the children, guarded
// by one of 64 mutexes picked by the parent's address. Those mutexes live
// for the whole process, so a child can always lock its parent's even when
// the parent's call object was freed or serves another call meanwhile; the
// parent's end detaches every child under it. The parent reads its list
// head without the mutex, so a server call with no children pays one atomic
// load when cancelled and one at its end.
//
// Lock order: the link's mutex, then a child's own (ClientContext::mu_),
// then its channel loop's (posting the cancellation). Nothing allocates.
// Defined in rpc/client_context.cc, beside the child's side it links.
class ContextLink {
 public:
  // The parent's deadline, to inherit.
  static absl::Duration ParentDeadline(const ServerContext& parent);
  // Any thread, while the parent's handler runs: links `child` (being
  // constructed) to `parent`. A parent cancelled already cancels it at once
  // (it stays linked); one over cancels it and leaves it unlinked.
  static void Link(ClientContext* child, const ServerContext& parent);
  // Any thread: `child`, linked once, is destroyed.
  static void Unlink(ClientContext* child);

  // Any thread, after setting the parent's cancelled flag: cancels the
  // linked children (CANCELLED, or DEADLINE_EXCEEDED when the parent's
  // deadline has passed).
  static void CancelChildren(const ServerContext& parent);
  // The parent call is over (its ended flag set): cancels the children
  // still linked and detaches them all.
  static void EndChildren(const ServerContext& parent);
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CONTEXT_LINK_H_
