#include "cubby/cache.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>

#include "cubby/cubin.hpp"
#include "cubby/driver.hpp"

namespace cubby {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The sorted, de-duplicated name expressions of a request (what an entry under its key holds).
std::vector<std::string> distinct(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

// Files named by NVRTC's pre-include options (`--pre-include=F`, `--pre-include F`,
// `-include F`), which the compile reads as if `#include`d first.
std::vector<std::string> pre_includes(const std::vector<std::string>& options) {
  std::vector<std::string> files;
  for (std::size_t i = 0; i < options.size(); ++i) {
    const std::string& option = options[i];
    if (option.starts_with("--pre-include=")) {
      files.push_back(option.substr(14));
    } else if ((option == "--pre-include" || option == "-include") && i + 1 < options.size()) {
      files.push_back(options[++i]);
    }
  }
  return files;
}

// Checks that an entry stored under a key derived from `names` is the entry for them: it holds a
// lowered name for each expression, and each lowered name is a symbol of its payload.
Result<void> validate(const Entry& entry, const std::vector<std::string>& names) {
  if (entry.lowered_names.size() != names.size()) {
    return fail(Errc::corrupt, "entry holds ", std::to_string(entry.lowered_names.size()),
                " lowered names, the request has ", std::to_string(names.size()));
  }
  for (const std::string& name : names) {
    if (!entry.lowered_names.contains(name)) {
      return fail(Errc::corrupt, "entry has no lowered name for '", name, "'");
    }
  }
  if (entry.kind == PayloadKind::cubin) {
    auto symbols = read_cubin_symbols(entry.payload);
    if (!symbols) return std::move(symbols).error();
    for (const auto& [expression, lowered] : entry.lowered_names) {
      if (!symbols->has_kernel(lowered) && !symbols->has_variable(lowered)) {
        return fail(Errc::corrupt, "lowered name ", lowered, " of '", expression,
                    "' is not a symbol of the entry's CUBIN");
      }
    }
  } else {
    for (const auto& [expression, lowered] : entry.lowered_names) {
      if (!payload_has_symbol(entry.payload, payload_kind_name(entry.kind), lowered)) {
        return fail(Errc::corrupt, "lowered name ", lowered, " of '", expression,
                    "' is not in the entry's payload");
      }
    }
  }
  return {};
}

}  // namespace

const char* source_name(Source source) noexcept {
  switch (source) {
    case Source::memory:
      return "memory";
    case Source::disk:
      return "disk";
    case Source::remote:
      return "remote";
    case Source::compiled:
      return "compiled";
  }
  return "unknown";
}

const std::string& CacheResult::lowered_name(std::string_view name_expression) const {
  const auto found = entry->lowered_names.find(std::string(name_expression));
  if (found == entry->lowered_names.end()) {
    throw Error(Errc::name_not_found, "'" + std::string(name_expression) +
                                          "' was not among the name expressions of this compile; "
                                          "add it to the request's name_expressions");
  }
  return found->second;
}

Cache::Cache(Config config)
    : config_(std::move(config)), memory_(config_.memory_entries), disk_(config_.dir) {}

Cache::Cache() : Cache(Config::from_env().value_or_throw()) {}

Cache::~Cache() = default;

std::string Cache::default_arch() const {
  std::call_once(arch_once_, [this] {
    if (!config_.default_arch.empty()) {
      arch_ = config_.default_arch;
    } else if (auto arch = gpu_arch()) {
      arch_ = *arch;
    } else {
      arch_ = "sm_90";
    }
  });
  return arch_;
}

KeyInputs Cache::key_inputs(const CompileRequest& request) const {
  auto nvrtc = locate_nvrtc();
  if (!nvrtc) throw Error(std::move(nvrtc).error());
  KeyInputs inputs;
  inputs.format_version = kEntryFormatVersion;
  inputs.nvrtc_version = nvrtc->version;
  inputs.nvrtc_identity = nvrtc->identity;
  inputs.arch = request.arch.empty() ? default_arch() : request.arch;
  inputs.options = request.options;
  inputs.source = request.source;
  inputs.program_name = request.program_name;
  inputs.name_expressions = request.name_expressions;
  // NVRTC resolves a quoted include of the top source in the folder of the program name,
  // relative to the working folder, when the request names no source folder.
  std::filesystem::path source_dir = request.source_dir;
  if (source_dir.empty()) {
    std::error_code ec;
    source_dir = (std::filesystem::current_path(ec) / request.program_name).parent_path();
  }
  // Toolkit headers are covered by the NVRTC identity: never scan the toolkit's include folder.
  auto include_paths = include_paths_from_options(request.options);
  if (!nvrtc->include_dir.empty()) {
    std::erase_if(include_paths, [&](const std::filesystem::path& path) {
      std::error_code ec;
      const auto canonical = std::filesystem::weakly_canonical(path, ec);
      const auto relative = canonical.lexically_relative(nvrtc->include_dir);
      return !ec && !relative.empty() && *relative.begin() != "..";
    });
  }
  const auto forced = pre_includes(request.options);
  if (forced.empty()) {
    inputs.headers = scan_headers(request.source, source_dir, include_paths);
  } else {
    // Pre-included files are scanned as if the source began with an #include of each.
    std::string scanned;
    for (const auto& file : forced) scanned += "#include \"" + file + "\"\n";
    scanned += request.source;
    inputs.headers = scan_headers(scanned, source_dir, include_paths);
  }
  return inputs;
}

Key Cache::key_of(const CompileRequest& request) const { return derive_key(key_inputs(request)); }

Stats Cache::stats() const {
  std::lock_guard lock(stats_mutex_);
  return stats_;
}

void Cache::count(const std::function<void(Stats&)>& update) {
  std::lock_guard lock(stats_mutex_);
  update(stats_);
}

std::shared_ptr<const Entry> Cache::from_disk(const Key& key, const KeyInputs& inputs) {
  auto bytes = disk_.get(key);
  if (!bytes || !bytes->has_value()) return nullptr;  // a tier that fails is a miss
  const std::uint64_t size = (*bytes)->size();
  count([&](Stats& s) { s.bytes_read += size; });
  auto entry = decode_entry(**bytes);
  Result<void> valid =
      entry ? validate(*entry, distinct(inputs.name_expressions)) : Result<void>(entry.error());
  if (!valid) {
    std::fprintf(stderr, "cubby: entry %s in %s is corrupt (%s); removing it and recompiling\n",
                 key.hex().c_str(), disk_.root().c_str(), valid.error().message.c_str());
    count([](Stats& s) { ++s.corrupt; });
    if (!config_.read_only) (void)disk_.remove(key);
    return nullptr;
  }
  return std::make_shared<const Entry>(std::move(entry).value());
}

void Cache::store(const Key& key, const Entry& entry) {
  if (config_.read_only) return;
  const std::string bytes = encode_entry(entry);
  auto written = disk_.put(key, bytes);
  if (written) {
    count([&](Stats& s) { s.bytes_written += bytes.size(); });
    return;
  }
  count([](Stats& s) { ++s.failed_writes; });
  if (!warned_write_.exchange(true)) {
    std::fprintf(stderr,
                 "cubby: cannot write to the store %s (%s); compiled kernels stay usable but are "
                 "not cached (this warning is shown once)\n",
                 disk_.root().c_str(), written.error().message.c_str());
  }
}

CacheResult Cache::compile(const CompileRequest& request) {
  const auto start = Clock::now();
  CompileRequest resolved = request;
  if (resolved.arch.empty()) resolved.arch = default_arch();
  const KeyInputs inputs = key_inputs(resolved);
  CacheResult result;
  result.key = derive_key(inputs);

  auto finish = [&](std::shared_ptr<const Entry> entry, Source tier) {
    result.entry = std::move(entry);
    result.tier = tier;
    result.hit = tier != Source::compiled;
    result.elapsed_ms = ms_since(start);
    return result;
  };
  auto hit = [&](std::shared_ptr<const Entry> entry, Source tier) {
    const double saved = static_cast<double>(entry->compile_us) / 1000.0;
    count([&](Stats& s) {
      (tier == Source::memory ? s.hits_memory : s.hits_disk) += 1;
      s.compile_ms_saved += saved;
    });
    return finish(std::move(entry), tier);
  };

  if (!config_.disabled) {
    if (auto entry = memory_.get(result.key)) return hit(std::move(entry), Source::memory);
  }
  // One compile per key at a time in this process: later callers wait and then hit memory.
  std::lock_guard flight(key_mutexes_[result.key.bytes[0] % key_mutexes_.size()]);
  if (!config_.disabled) {
    if (auto entry = memory_.get(result.key)) return hit(std::move(entry), Source::memory);
    if (auto entry = from_disk(result.key, inputs)) {
      memory_.put(result.key, entry);
      return hit(std::move(entry), Source::disk);
    }
    count([](Stats& s) { ++s.misses; });
  }

  auto compiled = compile_nvrtc(resolved);
  if (!compiled) {
    count([](Stats& s) { ++s.compile_failures; });
    throw Error(std::move(compiled).error());
  }
  auto entry = std::make_shared<const Entry>(std::move(compiled).value());
  const double compile_ms = static_cast<double>(entry->compile_us) / 1000.0;
  count([&](Stats& s) {
    ++s.compiles;
    s.compile_ms += compile_ms;
  });
  if (!config_.disabled) {
    store(result.key, *entry);
    memory_.put(result.key, entry);
  }
  return finish(std::move(entry), Source::compiled);
}

}  // namespace cubby
