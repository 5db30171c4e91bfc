#include "diagnostic.hpp"

#include <sstream>

namespace rootspan {

namespace {

// "[a,b)", or "[a,+n)" when the end does not fit in 64 bits.
void describe_range(std::ostringstream &out, std::uint64_t offset, std::uint64_t length) {
  std::uint64_t end = 0;
  if (__builtin_add_overflow(offset, length, &end)) {
    out << '[' << offset << ",+" << length << ')';
  } else {
    out << '[' << offset << ',' << end << ')';
  }
}

void describe_request(std::ostringstream &out, const Requested &r) {
  switch (r.kind) {
    case ROOTSPAN_REQUESTED_ROOT_KEY_RANGE:
      out << " for root " << r.root_id << " key (" << r.key.domain << ',' << r.key.local << ") range ";
      describe_range(out, r.offset, r.length);
      break;
    case ROOTSPAN_REQUESTED_KEY_RANGE:
      out << " for key (" << r.key.domain << ',' << r.key.local << ") range ";
      describe_range(out, r.offset, r.length);
      break;
    case ROOTSPAN_REQUESTED_RANGE:
      out << " for range ";
      describe_range(out, r.offset, r.length);
      break;
    default:
      break;
  }
}

}  // namespace

const char *status_name(rootspan_status status) {
  static constexpr const char *kNames[] = {"Ok",
                                           "InvalidArgument",
                                           "RangeOverflow",
                                           "InvalidAlignment",
                                           "MisalignedOffset",
                                           "OffsetOverflow",
                                           "OutsideRootExtent",
                                           "InvalidKey",
                                           "DomainNotGranted",
                                           "DuplicateIdentity",
                                           "RootIdExhausted",
                                           "Busy",
                                           "ReadOnly",
                                           "Conflict",
                                           "DTypeMismatch",
                                           "LengthMismatch",
                                           "Misaligned",
                                           "Unsupported",
                                           "InvalidRequest",
                                           "ProviderFailure",
                                           "NotFound",
                                           "OutOfMemory",
                                           "InvalidManifest",
                                           "PluginRejected",
                                           "AbiMismatch",
                                           "NoProvider",
                                           "Io",
                                           "InvalidCheckpoint",
                                           "InvalidSchema",
                                           "InvalidPayload",
                                           "Cancelled",
                                           "DigestMismatch",
                                           "SignatureInvalid"};
  if (status < 0 || static_cast<std::size_t>(status) >= std::size(kNames)) return "Unknown";
  return kNames[status];
}

std::string Diagnostic::message() const {
  std::ostringstream out;
  out << operation;
  describe_request(out, requested);
  if (requested.kind != ROOTSPAN_REQUESTED_NONE) {
    if (resolution) {
      out << ": resolved to span ";
      describe_range(out, resolution->offset, resolution->length);
    } else {
      out << ": unresolved";
    }
  }
  out << ": ";
  if (!policy.empty()) out << policy << ": ";
  out << cause;
  return out.str();
}

Diagnostic make_error(rootspan_status code, std::string operation, std::string cause) {
  Diagnostic d;
  d.code = code;
  d.operation = std::move(operation);
  d.cause = std::move(cause);
  return d;
}

Diagnostic make_error(rootspan_status code, std::string operation, std::string cause, std::uint64_t expected,
                      std::uint64_t actual) {
  Diagnostic d = make_error(code, std::move(operation), std::move(cause));
  d.values = std::make_pair(expected, actual);
  return d;
}

Diagnostic unknown_enum(const char *argument, const char *type, std::int64_t value) {
  return make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, "",
                    std::string(argument) + " " + std::to_string(value) + " is not a " + type + " value");
}

Diagnostic with_request(Diagnostic d, const char *operation, const Requested &requested) {
  d.operation = operation;
  d.requested = requested;
  return d;
}

}  // namespace rootspan
