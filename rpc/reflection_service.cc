#include "rpc/reflection_service.h"

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"
#include "proto/grpc/reflection/v1alpha/reflection.pb.h"
#include "rpc/internal/common/misuse.h"
#include "rpc/server_context.h"
#include "rpc/server_stream.h"
#include "rpc/status.h"

namespace h2rpc {

namespace {

using google::protobuf::Descriptor;
using google::protobuf::DescriptorPool;
using google::protobuf::FieldDescriptor;
using google::protobuf::FileDescriptor;
using grpc::reflection::v1alpha::ExtensionNumberResponse;
using grpc::reflection::v1alpha::FileDescriptorResponse;
using grpc::reflection::v1alpha::ServerReflectionRequest;
using grpc::reflection::v1alpha::ServerReflectionResponse;

constexpr char kInfoPath[] =
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";

// Appends `file`, then its transitive dependencies, each once in `response`
// (`sent` holds the files already there; a pool has one FileDescriptor per
// file name).
void AddFileAndDependencies(const FileDescriptor* file,
                            std::unordered_set<const FileDescriptor*>& sent,
                            FileDescriptorResponse* response) {
  if (!sent.insert(file).second) return;
  google::protobuf::FileDescriptorProto proto;
  file->CopyTo(&proto);
  proto.SerializeToString(response->add_file_descriptor_proto());
  for (int i = 0; i < file->dependency_count(); ++i) {
    AddFileAndDependencies(file->dependency(i), sent, response);
  }
}

// The answer to a request for a file: `file` and its dependencies.
void AnswerFile(const FileDescriptor& file,
                ServerReflectionResponse* response) {
  std::unordered_set<const FileDescriptor*> sent;
  AddFileAndDependencies(&file, sent,
                         response->mutable_file_descriptor_response());
}

Status AnswerExtensionNumbers(const DescriptorPool& pool,
                              const std::string& type,
                              ExtensionNumberResponse* response) {
  const Descriptor* descriptor = pool.FindMessageTypeByName(type);
  if (descriptor == nullptr) {
    return Status(StatusCode::kNotFound,
                  absl::StrCat("message type \"", type, "\" not found"));
  }
  std::vector<const FieldDescriptor*> extensions;
  pool.FindAllExtensions(descriptor, &extensions);
  for (const FieldDescriptor* extension : extensions) {
    response->add_extension_number(extension->number());
  }
  response->set_base_type_name(descriptor->full_name());
  return Status();
}

Status AnswerFileContainingExtension(const DescriptorPool& pool,
                                     const std::string& type, int32_t number,
                                     ServerReflectionResponse* response) {
  const Descriptor* descriptor = pool.FindMessageTypeByName(type);
  if (descriptor == nullptr) {
    return Status(StatusCode::kNotFound,
                  absl::StrCat("message type \"", type, "\" not found"));
  }
  const FieldDescriptor* extension =
      pool.FindExtensionByNumber(descriptor, number);
  if (extension == nullptr) {
    return Status(
        StatusCode::kNotFound,
        absl::StrCat("extension ", number, " of \"", type, "\" not found"));
  }
  AnswerFile(*extension->file(), response);
  return Status();
}

Status ShuttingDown() {
  return Status(StatusCode::kUnavailable, "the server is shutting down");
}

}  // namespace

// One ServerReflectionInfo call: a bidirectional reactor on the call's loop
// thread. Exactly one operation is outstanding at any time (a read, or the
// write answering it) until the call finishes, and the events run one at a
// time, so request_ and response_ need no lock. The rest of its state is
// guarded by the service's mutex, which every event and the server's
// shutdown (any thread) take; the reactor's Start* and Finish only post
// tasks to the loop, so calling them with the mutex held never re-enters
// it. Finish runs once: from the shutdown, or from the completion that
// ends the call.
class ReflectionService::Stream final
    : public ServerBidiReactor<ServerReflectionRequest,
                               ServerReflectionResponse> {
 public:
  // Loop thread (the factory): registers with `service` and reads the first
  // request, or finishes at once (max_streams, max_streams_per_connection,
  // server shutting down).
  Stream(ReflectionService* service, uint64_t connection_id)
      : service_(service), connection_id_(connection_id) {
    MutexLock lock(&service_->mu_);
    if (service_->server_shut_down_) {
      EndLocked(ShuttingDown());
      return;
    }
    if (service_->streams_.size() >= service_->options_.max_streams) {
      EndLocked(
          Status(StatusCode::kResourceExhausted,
                 absl::StrCat(service_->streams_.size(),
                              " reflection streams are open, the limit "
                              "(ReflectionServiceOptions::max_streams)")));
      return;
    }
    auto it = service_->connection_streams_.find(connection_id_);
    const size_t on_connection =
        it == service_->connection_streams_.end() ? 0 : it->second;
    if (on_connection >= service_->options_.max_streams_per_connection) {
      EndLocked(Status(
          StatusCode::kResourceExhausted,
          absl::StrCat(on_connection,
                       " reflection streams are open on this connection, the "
                       "limit (ReflectionServiceOptions::max_streams_per_"
                       "connection)")));
      return;
    }
    service_->streams_.insert(this);
    ++service_->connection_streams_[connection_id_];
    registered_ = true;
    StartRead(&request_);
  }

  // The server is shutting down: ends the stream with UNAVAILABLE, at once
  // while it waits for a request (Finish ends the read: it completes with
  // false, or with a request that arrived meanwhile, left unanswered),
  // otherwise once the response being written is written.
  void Close() ABSL_EXCLUSIVE_LOCKS_REQUIRED(service_->mu_) {
    closing_ = true;
    if (!writing_) EndLocked(ShuttingDown());
  }

 private:
  void OnReadDone(bool ok) override {
    {
      MutexLock lock(&service_->mu_);
      if (finished_) return;  // closed while reading
      if (!ok) {
        // The client half-closed (or the call was cancelled: then the
        // status is not sent).
        EndLocked(Status());
        return;
      }
      writing_ = true;  // from now on Close waits for the write
    }
    // Outside the mutex: Answer takes it for list_services.
    service_->Answer(&request_, &response_);
    StartWrite(&response_);
  }

  void OnWriteDone(bool ok) override {
    response_ = ServerReflectionResponse();  // frees the files
    MutexLock lock(&service_->mu_);
    writing_ = false;
    if (!ok) {
      EndLocked(Status(StatusCode::kCancelled, "the reflection call is over"));
      return;
    }
    if (closing_) {
      EndLocked(ShuttingDown());
      return;
    }
    StartRead(&request_);
  }

  void OnDone() override {
    {
      MutexLock lock(&service_->mu_);
      if (registered_) {
        service_->streams_.erase(this);
        auto it = service_->connection_streams_.find(connection_id_);
        if (--it->second == 0) service_->connection_streams_.erase(it);
      }
    }
    delete this;
  }

  // Finishes the call with `status` unless it already was.
  void EndLocked(const Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(service_->mu_) {
    if (finished_) return;
    finished_ = true;
    Finish(status);
  }

  ReflectionService* const service_;
  const uint64_t connection_id_;  // ServerContext::connection_id()
  bool registered_ ABSL_GUARDED_BY(service_->mu_) = false;
  // A write is outstanding (or about to start): set once a request is read.
  bool writing_ ABSL_GUARDED_BY(service_->mu_) = false;
  bool closing_ ABSL_GUARDED_BY(service_->mu_) = false;
  bool finished_ ABSL_GUARDED_BY(service_->mu_) = false;
  ServerReflectionRequest request_;
  ServerReflectionResponse response_;
};

// A stream registers only with the service it was made for, so its
// service_->mu_ is this mu_, which the caller holds; the analysis cannot
// see that the two are the same.
void ReflectionService::CloseStream(Stream* stream)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  stream->Close();
}

ReflectionService::ReflectionService(ReflectionServiceOptions options)
    : options_(options),
      pool_(options.pool != nullptr ? *options.pool
                                    : *DescriptorPool::generated_pool()) {}

ReflectionService::~ReflectionService() {
  MutexLock lock(&mu_);
  if (!streams_.empty()) {
    internal::ReportMisuse(absl::StrCat(
        "ReflectionService destroyed with ", streams_.size(),
        " streams open; it must outlive the server it is registered on"));
  }
}

Server::Builder& ReflectionService::AddTo(Server::Builder& builder) {
  builder.RegisterCallbackBidiStreaming<ServerReflectionRequest,
                                        ServerReflectionResponse>(
      kInfoPath,
      [this](ServerContext* context)
          -> ServerBidiReactor<ServerReflectionRequest,
                               ServerReflectionResponse>* {
        return new Stream(this, context->connection_id());
      });
  builder.AddServiceListCallback(
      [this](const std::vector<std::string>& services) {
        MutexLock lock(&mu_);
        services_ = services;
      });
  builder.AddShutdownCallback([this] { OnServerShutdown(); });
  return builder;
}

void ReflectionService::OnServerShutdown() {
  MutexLock lock(&mu_);
  server_shut_down_ = true;
  for (Stream* stream : streams_) CloseStream(stream);
}

std::vector<std::string> ReflectionService::services() const {
  MutexLock lock(&mu_);
  return services_;
}

size_t ReflectionService::open_streams() const {
  MutexLock lock(&mu_);
  return streams_.size();
}

void ReflectionService::Answer(ServerReflectionRequest* request,
                               ServerReflectionResponse* response) const {
  Status status;
  switch (request->message_request_case()) {
    case ServerReflectionRequest::kListServices: {
      auto* list = response->mutable_list_services_response();
      MutexLock lock(&mu_);
      for (const std::string& name : services_) {
        list->add_service()->set_name(name);
      }
      break;
    }
    case ServerReflectionRequest::kFileByFilename: {
      const std::string& name = request->file_by_filename();
      const FileDescriptor* file = pool_.FindFileByName(name);
      if (file == nullptr) {
        status = Status(StatusCode::kNotFound,
                        absl::StrCat("file \"", name, "\" not found"));
      } else {
        AnswerFile(*file, response);
      }
      break;
    }
    case ServerReflectionRequest::kFileContainingSymbol: {
      const std::string& symbol = request->file_containing_symbol();
      const FileDescriptor* file = pool_.FindFileContainingSymbol(symbol);
      if (file == nullptr) {
        status = Status(StatusCode::kNotFound,
                        absl::StrCat("symbol \"", symbol, "\" not found"));
      } else {
        AnswerFile(*file, response);
      }
      break;
    }
    case ServerReflectionRequest::kFileContainingExtension:
      status = AnswerFileContainingExtension(
          pool_, request->file_containing_extension().containing_type(),
          request->file_containing_extension().extension_number(), response);
      break;
    case ServerReflectionRequest::kAllExtensionNumbersOfType:
      status = AnswerExtensionNumbers(
          pool_, request->all_extension_numbers_of_type(),
          response->mutable_all_extension_numbers_response());
      break;
    case ServerReflectionRequest::MESSAGE_REQUEST_NOT_SET:
      status = Status(StatusCode::kUnimplemented,
                      "the request sets none of file_by_filename, "
                      "file_containing_symbol, file_containing_extension, "
                      "all_extension_numbers_of_type and list_services");
      break;
  }
  if (!status.ok()) {
    auto* error = response->mutable_error_response();
    error->set_error_code(static_cast<int32_t>(status.code()));
    error->set_error_message(status.message());
  }
  response->set_valid_host(request->host());
  response->mutable_original_request()->Swap(request);
}

}  // namespace h2rpc
