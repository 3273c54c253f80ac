// `cubby compile`: compiles a .cu file through the cache (the contract's JSON object with --json).
#include <iostream>

#include "cli.hpp"
#include "cubby/cache.hpp"
#include "cubby/key.hpp"

namespace cubby::cli {
namespace {

struct CompileArgs {
  std::string file;
  std::vector<std::string> name_expressions;
  std::vector<std::string> options;
  std::string arch;
  std::string program_name;
  std::string cubin_out;
  bool explain = false;
};

// The request of `cubby compile FILE`: the source, its program name and folder, and the options.
CompileRequest make_request(const CompileArgs& args) {
  CompileRequest request;
  request.source = read_input(args.file);
  const fs::path file(args.file);
  // The default program name is the library's (CompileRequest's), so a program compiled here and
  // the same text compiled through the library with no program name share one key, whatever the
  // file is called or where it lies. NVRTC then looks up the source's quoted includes in the
  // working folder (the program name's folder) before the file's folder (`source_dir`, passed as
  // the first -I); the key's scan models exactly that order (plan_includes), so a header in either
  // folder is part of the key.
  if (!args.program_name.empty()) request.program_name = args.program_name;
  std::error_code ec;
  const fs::path absolute = fs::absolute(file, ec);
  request.source_dir = ec ? file.parent_path() : absolute.parent_path();
  request.name_expressions = args.name_expressions;
  request.options = args.options;
  request.arch = args.arch;
  return request;
}

// --explain --json: every key field as [{label, summary, hash}] (full hashes).
json explain_json(const std::vector<KeyField>& fields) {
  json explain = json::array();
  for (const auto& field : fields) {
    explain.push_back({{"label", field.label}, {"summary", field.summary}, {"hash", field.hash}});
  }
  return explain;
}

// `text` with every `from` replaced by `to`.
std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); !from.empty() && at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// Compiles through the cache; a compile error is an operation failure that prints NVRTC's log
// (with --json also an object {error, message, log, file, program_name} on stdout), a refused
// request (an option NVRTC rejects, a bad architecture) a usage failure. NVRTC and the library
// name the program in what they say; the default program name (kept so that the key is the
// library's for the same source) is shown as the user's file name instead.
CacheResult compile_or_fail(Cache& cache, const CompileRequest& request, const CompileArgs& args,
                            bool as_json) {
  try {
    return cache.compile(request);
  } catch (const Error& error) {
    const bool default_name = args.program_name.empty();
    const auto shown = [&](const std::string& text) {
      return default_name ? replace_all(text, request.program_name, args.file) : text;
    };
    if (error.code() != Errc::compile_failed) {  // a refused option, architecture, ...: usage
      fail_with(error.code() == Errc::invalid_argument ? kExitUsage : kExitFailed,
                shown(error.what()));
    }
    std::string message = shown(error.what());
    if (!message.empty() && message.back() != '\n') message += '\n';
    if (as_json) {
      print_json({{"error", "compile_failed"},
                  {"message", message},
                  {"log", shown(error.log())},
                  {"file", args.file},
                  {"program_name", request.program_name}});
    }
    fail_with(kExitFailed, "compiling " + args.file +
                               (default_name ? std::string()
                                             : " (as NVRTC program " + request.program_name + ")") +
                               ": " + message +
                               "Fix the errors above and run `cubby compile` again; nothing was "
                               "stored.");
  }
}

// --json: the contract's object (see docs/reference.md, `cubby compile --json`).
void print_result_json(const Cache& cache, const CompileRequest& request, const CacheResult& result,
                       const CompileArgs& args, const json& explain) {
  const Entry& entry = *result.entry;
  json out = {
      {"key", result.key.hex()},
      {"hit", result.hit},
      {"tier", source_name(result.tier)},
      {"lowered_names", names_json(entry)},
      {"cubin_bytes", entry.payload.size()},
      {"payload_kind", payload_kind_name(entry.kind)},
      {"compile_ms", rounded_ms(compile_ms_of(entry))},
      {"elapsed_ms", rounded_ms(result.elapsed_ms)},
      {"log", entry.log},
      {"program_name", request.program_name},
      {"arch", request.arch.empty() ? cache.default_arch() : request.arch},
      {"dir", cache.config().dir.string()},
  };
  if (result.uncached != Uncached::none) {  // compiled without the store: why
    out["uncached"] = uncached_name(result.uncached);
    out["uncached_detail"] = result.uncached_detail;
  }
  if (!args.cubin_out.empty()) out["cubin_out"] = args.cubin_out;
  if (args.explain) out["explain"] = explain;
  print_json(out);
}

void print_result_text(const CacheResult& result, const CompileArgs& args) {
  const Entry& entry = *result.entry;
  std::cout << "key      " << result.key.hex() << '\n';
  std::cout << "result   "
            << (result.hit ? std::string("hit (") + source_name(result.tier) + ")"
                           : std::string("compiled"))
            << '\n';
  if (result.uncached != Uncached::none) {
    std::cout << "store    not used: " << uncached_info(result.uncached).label << ", "
              << result.uncached_detail << '\n';
  }
  std::cout << "payload  " << payload_kind_name(entry.kind) << ", "
            << format_bytes(entry.payload.size()) << '\n';
  std::cout << "compile  " << format_ms(compile_ms_of(entry)) << " (original compile)\n";
  std::cout << "elapsed  " << format_ms(result.elapsed_ms) << " (this call)\n";
  if (!entry.lowered_names.empty()) {
    std::cout << "names\n";
    for (const auto& [expression, lowered] : entry.lowered_names) {
      std::cout << "  " << expression << " -> " << lowered << '\n';
    }
  }
  if (!entry.log.empty())
    std::cout << "log\n" << entry.log << (entry.log.back() == '\n' ? "" : "\n");
  if (!args.cubin_out.empty()) std::cout << "wrote    " << args.cubin_out << '\n';
}

int run_compile(const Common& common, const CompileArgs& args) {
  const CompileRequest request = make_request(args);
  Cache cache(load_config(common));
  const std::vector<KeyField> fields =
      args.explain ? explain_key(cache.key_inputs(request)) : std::vector<KeyField>{};
  const json explain = explain_json(fields);
  // The text form is the one key-dump layout (format_key_fields), as the test harnesses print it.
  if (args.explain && !common.json) std::cout << format_key_fields(fields);

  const CacheResult result = compile_or_fail(cache, request, args, common.json);
  if (!args.cubin_out.empty()) write_output(args.cubin_out, result.entry->payload);
  if (common.json) {
    print_result_json(cache, request, result, args, explain);
  } else {
    print_result_text(result, args);
  }
  return kExitOk;
}

}  // namespace

Command add_compile(CLI::App& app, Common& common) {
  auto args = std::make_shared<CompileArgs>();
  CLI::App* command = add_command(app, "compile", "Compile a .cu file through the cache");
  add_option(*command, "FILE", args->file, "CUDA source file")->required();
  add_option(*command, "--name-expr", args->name_expressions,
             "Name expression whose lowered name to capture (repeatable)")
      ->allow_extra_args(false)
      ->type_name("E");
  add_option(*command, "--option", args->options, "NVRTC option (repeatable)")
      ->allow_extra_args(false)
      ->type_name("O");
  add_option(*command, "--arch", args->arch,
             "Target architecture, e.g. sm_90 (default: $CUBBY_ARCH, GPU 0, else sm_90)")
      ->type_name("sm_XX");
  add_option(*command, "--program-name", args->program_name,
             "NVRTC program name (default: " + CompileRequest{}.program_name +
                 ", the library's default, so the key is the library's for the same "
                 "text); NVRTC looks up the source's "
                 "quoted includes in its folder (from the working folder) first, then in the "
                 "file's folder")
      ->type_name("N");
  add_option(*command, "--cubin-out", args->cubin_out, "Write the payload to FILE")
      ->type_name("FILE");
  add_flag(*command, "--explain", args->explain, "Print every key field with its hash");
  add_common(*command, common);
  return {command, [&common, args] { return run_compile(common, *args); }};
}

}  // namespace cubby::cli
