// Provider: one started provider instance behind its negotiated table. It owns
// the instance (init to shutdown), its granted domains, and a reference to the
// library that holds its code (L8). Every hook call goes through here, so a
// provider's status, message and exceptions become one Diagnostic.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "diagnostic.hpp"
#include "rootspan/provider.h"

namespace rootspan {

class Provider {
 public:
  // The table must already be negotiated (L6): a full-size copy whose fields
  // past the provider's struct_size are NULL. `library` keeps the plugin's code
  // loaded while this provider (and so any of its roots) lives; empty for a
  // static provider.
  static Result<std::shared_ptr<Provider>> start(const rootspan_provider_table &table, std::shared_ptr<void> library,
                                                 const std::string &options_json);
  ~Provider();
  Provider(const Provider &) = delete;
  Provider &operator=(const Provider &) = delete;

  const std::string &name() const { return name_; }
  const std::string &kind() const { return kind_; }
  const rootspan_provider_table &table() const { return table_; }
  rootspan_provider_instance *instance() const { return instance_; }
  bool owns_domain(std::uint64_t domain) const;
  std::uint64_t device_count() const { return device_count_; }
  // Why device_count() is 0, in the provider's words (or "").
  const std::string &device_note() const { return device_note_; }

  // A hook's outcome as a Diagnostic: runs `call` with a fresh message buffer
  // and turns a non-OK status, or an exception, into an error naming the
  // provider and the hook.
  // A message written on success (a zero device count's reason) goes to *note.
  template <class Call>
  Result<void> invoke(const char *hook, Call &&call, std::string *note = nullptr) const {
    std::array<char, 512> text;  // not zero-filled: this is on the mapping path
    text.front() = '\0';
    rootspan_provider_message message{text.data(), text.size()};
    rootspan_status status = ROOTSPAN_OK;
    try {
      status = call(&message);
    } catch (const std::exception &e) {
      return failure(hook, ROOTSPAN_ERR_PROVIDER_FAILURE, std::string("threw an exception: ") + e.what());
    } catch (...) {
      return failure(hook, ROOTSPAN_ERR_PROVIDER_FAILURE, "threw a non-standard exception");
    }
    text.back() = '\0';
    if (status == ROOTSPAN_OK) {
      if (note != nullptr) *note = text.data();
      return BOOST_OUTCOME_V2_NAMESPACE::success();
    }
    return failure(hook, status, text.data());
  }

  // Calls a hook that returns nothing (release, unmap, shutdown), swallowing
  // what a misbehaving provider throws: there is no one left to tell.
  template <class Call>
  void invoke_quietly(Call &&call) const noexcept {
    try {
      call();
    } catch (...) {
    }
  }

 private:
  Provider() = default;
  Diagnostic failure(const char *hook, rootspan_status status, const std::string &text) const;

  rootspan_provider_table table_{};
  std::shared_ptr<void> library_;
  rootspan_provider_instance *instance_ = nullptr;
  bool started_ = false;
  std::string name_;
  std::string kind_;
  std::array<std::uint64_t, ROOTSPAN_DOMAINS_PER_PROVIDER> domains_{};
  rootspan_core_services services_{};  // handed to init; valid until shutdown returns
  std::uint64_t device_count_ = 0;
  std::string device_note_;
};

}  // namespace rootspan
