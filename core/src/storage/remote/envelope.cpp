#include "storage/remote/envelope.hpp"

#include <cstdio>
#include <utility>

#include "storage/remote/compress.hpp"
#include "storage/remote/sign.hpp"

namespace cubby {

Envelope::Envelope(Tier& inner, EnvelopeOptions options, AtomicStats& counted)
    : inner_(inner), options_(std::move(options)), counted_(counted) {}

std::uint64_t Envelope::max_value(std::uint64_t max_entry) {
  return max_entry + kSignatureMagic.size() + kSignatureBytes;
}

Failure Envelope::reject(const Key& key, Failure why) {
  counted_.add(Stat::remote_rejected);
  if (!warned_rejected_.exchange(true)) {
    std::fprintf(stderr,
                 "cubby: rejected remote entry %s from %s: %s (counted as rejected in `cubby "
                 "stats`; shown once)\n",
                 key.hex().c_str(), options_.location.c_str(), why.message.c_str());
  }
  return why;
}

Result<std::optional<std::string>> Envelope::get(const Key& key) {
  auto got = inner_.get(key);
  if (!got || !got->has_value()) return got;
  std::string& raw = **got;
  std::string_view value(raw);
  if (!options_.secret.empty()) {
    auto opened = open_signed(options_.secret, key, value);
    if (!opened) return reject(key, std::move(opened).error());
    value = *opened;
  } else if (is_signed(value) && value.size() >= kSignatureMagic.size() + kSignatureBytes) {
    value.remove_prefix(kSignatureMagic.size() + kSignatureBytes);
  }
  if (is_compressed(value)) {
    auto entry = decompress_value(value, options_.max_entry);
    if (!entry) return reject(key, std::move(entry).error());
    return std::optional<std::string>(std::move(entry).value());
  }
  // `value` is a suffix of `raw`: the envelope (if any) is cut off in place.
  raw.erase(0, raw.size() - value.size());
  return got;
}

Result<void> Envelope::put(const Key& key, std::string_view bytes) {
  if (bytes.size() > options_.max_entry) {
    counted_.add(Stat::remote_writes_dropped);
    return fail(Errc::invalid_argument, "entry ", key.hex(), " is ", std::to_string(bytes.size()),
                " bytes, over CUBBY_REMOTE_MAX_ENTRY; not sent to the remote");
  }
  const std::string compressed = options_.compress ? compress_value(bytes) : std::string();
  const std::string_view payload = options_.compress ? std::string_view(compressed) : bytes;
  if (options_.secret.empty()) return inner_.put(key, payload);
  return inner_.put(key, seal_signed(options_.secret, key, payload));
}

}  // namespace cubby
