#include "rpc/reflection_service.h"

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"
#include "proto/grpc/reflection/v1alpha/reflection.pb.h"
#include "rpc/internal/misuse.h"
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

}  // namespace

// One ServerReflectionInfo call: a bidirectional reactor on the call's loop
// thread. Every event runs there, one at a time, and exactly one operation
// is outstanding at any time (a read, or the write answering it), so its
// state needs no lock; each completion starts the next operation or calls
// Finish, which therefore runs once.
class ReflectionService::Stream final
    : public ServerBidiReactor<ServerReflectionRequest,
                               ServerReflectionResponse> {
 public:
  // Loop thread (the factory): reads the first request, or finishes at
  // once past max_streams.
  explicit Stream(ReflectionService* service) : service_(service) {
    size_t open = 0;
    if (!service_->TryOpenStream(&open)) {
      Finish(Status(StatusCode::kResourceExhausted,
                    absl::StrCat(open,
                                 " reflection streams are open, the limit "
                                 "(ReflectionServiceOptions::max_streams)")));
      return;
    }
    registered_ = true;
    StartRead(&request_);
  }

 private:
  void OnReadDone(bool ok) override {
    if (!ok) {
      // The client half-closed (or the call was cancelled: then the status
      // is not sent).
      Finish(Status());
      return;
    }
    service_->Answer(&request_, &response_);
    StartWrite(&response_);
  }

  void OnWriteDone(bool ok) override {
    response_ = ServerReflectionResponse();  // frees the files
    if (!ok) {
      Finish(Status(StatusCode::kCancelled, "the reflection call is over"));
      return;
    }
    StartRead(&request_);
  }

  void OnDone() override {
    if (registered_) service_->CloseStream();
    delete this;
  }

  ReflectionService* const service_;
  bool registered_ = false;
  ServerReflectionRequest request_;
  ServerReflectionResponse response_;
};

ReflectionService::ReflectionService(ReflectionServiceOptions options)
    : options_(options),
      pool_(options.pool != nullptr ? *options.pool
                                    : *DescriptorPool::generated_pool()) {}

ReflectionService::~ReflectionService() {
  transport::io::MutexLock lock(&mu_);
  if (open_streams_ != 0) {
    internal::ReportMisuse(absl::StrCat(
        "ReflectionService destroyed with ", open_streams_,
        " streams open; it must outlive the server it is registered on"));
  }
}

Server::Builder& ReflectionService::AddTo(Server::Builder& builder) {
  builder.RegisterCallbackBidiStreaming<ServerReflectionRequest,
                                        ServerReflectionResponse>(
      kInfoPath,
      [this](ServerContext*) -> ServerBidiReactor<ServerReflectionRequest,
                                                  ServerReflectionResponse>* {
        return new Stream(this);
      });
  builder.AddServiceListCallback(
      [this](const std::vector<std::string>& services) {
        transport::io::MutexLock lock(&mu_);
        services_ = services;
      });
  return builder;
}

std::vector<std::string> ReflectionService::services() const {
  transport::io::MutexLock lock(&mu_);
  return services_;
}

size_t ReflectionService::open_streams() const {
  transport::io::MutexLock lock(&mu_);
  return open_streams_;
}

bool ReflectionService::TryOpenStream(size_t* open) {
  transport::io::MutexLock lock(&mu_);
  *open = open_streams_;
  if (open_streams_ >= options_.max_streams) return false;
  ++open_streams_;
  return true;
}

void ReflectionService::CloseStream() {
  transport::io::MutexLock lock(&mu_);
  --open_streams_;
}

void ReflectionService::Answer(ServerReflectionRequest* request,
                               ServerReflectionResponse* response) const {
  Status status;
  switch (request->message_request_case()) {
    case ServerReflectionRequest::kListServices: {
      auto* list = response->mutable_list_services_response();
      transport::io::MutexLock lock(&mu_);
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
