#include "rpc/server.h"

#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "rpc/internal/server/server_core.h"

namespace h2rpc {

// ---------------------------------------------------------------------------
// Builder

Server::Builder& Server::Builder::AddListeningPort(std::string address,
                                                   int* selected_port) {
  return AddListeningPort(std::move(address), InsecureServerCredentials(),
                          selected_port);
}

Server::Builder& Server::Builder::AddListeningPort(
    std::string address, std::shared_ptr<ServerCredentials> credentials,
    int* selected_port) {
  if (credentials == nullptr) {
    error_ = Status(StatusCode::kInvalidArgument,
                    absl::StrCat("null credentials for port ", address));
    return *this;
  }
  ports_.push_back({std::move(address), selected_port, std::move(credentials)});
  return *this;
}

Server::Builder& Server::Builder::SetOptions(const ServerOptions& options) {
  options_ = options;
  return *this;
}

Server::Builder& Server::Builder::Register(
    std::string method, std::unique_ptr<internal::Method> handler) {
  const size_t slash = method.rfind('/');
  if (method.size() < 4 || method[0] != '/' || slash == 0 ||
      slash == method.size() - 1) {
    error_ =
        Status(StatusCode::kInvalidArgument,
               absl::StrCat("method '", method,
                            "' is not of the form /package.Service/Method"));
  } else if (!methods_.emplace(method, std::move(handler)).second) {
    error_ = Status(StatusCode::kInvalidArgument,
                    absl::StrCat("method '", method, "' registered twice"));
  }
  return *this;
}

Server::Builder& Server::Builder::RegisterCallbackGenericService(
    std::function<GenericServerBidiReactor*(ServerContext*)> factory) {
  return RegisterGeneric(
      std::make_unique<internal::CallbackGenericMethod>(std::move(factory)));
}

Server::Builder& Server::Builder::RegisterGenericService(
    std::function<Status(ServerContext*, GenericServerReaderWriter*)> handler) {
  return RegisterGeneric(
      std::make_unique<internal::SyncGenericMethod>(std::move(handler)));
}

Server::Builder& Server::Builder::RegisterGeneric(
    std::unique_ptr<internal::Method> handler) {
  if (generic_method_ != nullptr) {
    error_ = Status(StatusCode::kInvalidArgument,
                    "a generic service registered twice");
  } else {
    generic_method_ = std::move(handler);
  }
  return *this;
}

Server::Builder& Server::Builder::AddShutdownCallback(
    std::function<void()> callback) {
  shutdown_callbacks_.push_back(std::move(callback));
  return *this;
}

Server::Builder& Server::Builder::SetChannelz(
    std::shared_ptr<Channelz> channelz) {
  channelz_ = std::move(channelz);
  return *this;
}

Server::Builder& Server::Builder::AddInterceptor(
    std::shared_ptr<ServerInterceptor> interceptor) {
  interceptors_.push_back(std::move(interceptor));
  return *this;
}

Server::Builder& Server::Builder::AddServiceListCallback(
    std::function<void(const std::vector<std::string>&)> callback) {
  service_list_callbacks_.push_back(std::move(callback));
  return *this;
}

std::unique_ptr<Server> Server::Builder::BuildAndStart(Status* status) {
  if (!error_.ok()) {
    *status = error_;
    return nullptr;
  }
  if (!service_list_callbacks_.empty()) {
    // Register() accepted only "/package.Service/Method" paths.
    std::set<std::string, std::less<>> names;
    for (const auto& [path, method] : methods_) {
      names.emplace(absl::string_view(path).substr(1, path.rfind('/') - 1));
    }
    const std::vector<std::string> services(names.begin(), names.end());
    for (const auto& callback : service_list_callbacks_) callback(services);
  }
  options_.interceptors.insert(options_.interceptors.end(),
                               interceptors_.begin(), interceptors_.end());
  if (channelz_ != nullptr) options_.channelz = std::move(channelz_);
  std::unique_ptr<internal::ServerCore> core = internal::ServerCore::Start(
      std::move(options_), ports_, std::move(methods_),
      std::move(generic_method_), loops_, status);
  if (core == nullptr) return nullptr;
  return std::unique_ptr<Server>(
      new Server(std::move(core), std::move(shutdown_callbacks_)));
}

// ---------------------------------------------------------------------------
// Server

Server::Server(std::unique_ptr<internal::ServerCore> core,
               std::vector<std::function<void()>> shutdown_callbacks)
    : core_(std::move(core)),
      shutdown_callbacks_(std::move(shutdown_callbacks)) {}

Server::~Server() { Shutdown(absl::Now()); }

void Server::Shutdown(absl::Time deadline) {
  std::call_once(shutdown_callbacks_run_, [this] {
    for (const std::function<void()>& callback : shutdown_callbacks_) {
      callback();
    }
  });
  core_->Shutdown(deadline);
}

void Server::Wait() { core_->Wait(); }

int Server::live_calls() const { return core_->live_calls(); }

}  // namespace h2rpc
