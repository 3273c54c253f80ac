// CUBIN reader: the ELF64 symbol table of a CUBIN, every read bounds-checked.
//
// How a kernel is told apart (verified on NVRTC 13.0 sm_90 output, whole-program and -rdc):
// kernels are STT_FUNC symbols whose st_other carries STO_CUDA_ENTRY (0x10). A non-inlined
// __device__ function is an STT_FUNC without that bit (LOCAL "$kernel$name" clones in
// whole-program mode, GLOBAL in -rdc mode), so binding alone cannot decide it.
// Variables are STT_OBJECT symbols, or STT_CUDA_OBJECT (STT_LOPROC, 13) ones in -rdc mode,
// that are defined (not SHN_UNDEF) and named.
#include "cubby/cubin.hpp"

#include <algorithm>
#include <cstring>

#include "util/bytes.hpp"

namespace cubby {
namespace {

constexpr std::size_t kElfHeaderSize = 64;
constexpr std::size_t kSectionHeaderSize = 64;
constexpr std::size_t kSymbolSize = 24;
constexpr std::uint16_t kEmCuda = 190;
constexpr std::uint32_t kShtSymtab = 2;
constexpr std::uint32_t kShtStrtab = 3;
constexpr std::uint8_t kSttObject = 1;
constexpr std::uint8_t kSttFunc = 2;
constexpr std::uint8_t kSttCudaObject = 13;
constexpr std::uint8_t kStoCudaEntry = 0x10;
constexpr std::uint16_t kShnUndef = 0;

// True when [offset, offset + size) lies inside a buffer of `total` bytes (no overflow).
bool in_bounds(std::uint64_t offset, std::uint64_t size, std::uint64_t total) {
  return offset <= total && size <= total - offset;
}

struct Section {
  std::uint32_t type = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint32_t link = 0;
  std::uint64_t entsize = 0;
};

Section section_at(std::string_view elf, std::uint64_t table, std::uint64_t entsize,
                   std::uint64_t index) {
  const auto at = static_cast<std::size_t>(table + index * entsize);
  Section section;
  section.type = load_le<std::uint32_t>(elf, at + 4);
  section.offset = load_le<std::uint64_t>(elf, at + 24);
  section.size = load_le<std::uint64_t>(elf, at + 32);
  section.link = load_le<std::uint32_t>(elf, at + 40);
  section.entsize = load_le<std::uint64_t>(elf, at + 56);
  return section;
}

bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$' || c == '.';
}

// True when the PTX line (comments removed) declares `name` with .entry, .global or .const before
// it.
bool ptx_line_declares(std::string_view line, std::string_view name) {
  std::size_t at = 0;
  while ((at = line.find(name, at)) != std::string_view::npos) {
    const std::size_t end = at + name.size();
    const bool starts_token = at == 0 || !is_ident_char(line[at - 1]);
    const bool ends_token = end == line.size() || !is_ident_char(line[end]);
    if (starts_token && ends_token) {
      const std::string_view prefix = line.substr(0, at);
      bool declares = false;
      bool external = false;
      std::size_t pos = 0;
      while (pos < prefix.size()) {
        while (pos < prefix.size() && (prefix[pos] == ' ' || prefix[pos] == '\t')) ++pos;
        std::size_t stop = pos;
        while (stop < prefix.size() && prefix[stop] != ' ' && prefix[stop] != '\t') ++stop;
        const std::string_view token = prefix.substr(pos, stop - pos);
        if (token == ".entry" || token == ".global" || token == ".const") declares = true;
        if (token == ".extern") external = true;
        pos = stop;
      }
      return declares && !external;
    }
    at = end;
  }
  return false;
}

bool ptx_declares(std::string_view ptx, std::string_view name) {
  if (name.empty()) return false;
  std::size_t start = 0;
  while (start < ptx.size()) {
    std::size_t stop = ptx.find('\n', start);
    if (stop == std::string_view::npos) stop = ptx.size();
    std::string_view line = ptx.substr(start, stop - start);
    const std::size_t comment = line.find("//");
    if (comment != std::string_view::npos) line = line.substr(0, comment);
    if (ptx_line_declares(line, name)) return true;
    start = stop + 1;
  }
  return false;
}

}  // namespace

bool CubinSymbols::has_kernel(std::string_view name) const {
  return std::binary_search(kernels.begin(), kernels.end(), name,
                            [](std::string_view a, std::string_view b) { return a < b; });
}

bool CubinSymbols::has_variable(std::string_view name) const {
  auto it = std::lower_bound(variables.begin(), variables.end(), name,
                             [](const CubinVariable& v, std::string_view n) { return v.name < n; });
  return it != variables.end() && it->name == name;
}

namespace {

// Where the section headers are (checked to lie inside the file).
struct SectionTable {
  std::uint64_t offset, entry_size, count;
};

// The symbol table and its string table (both checked to lie inside the file).
struct SymbolTable {
  Section symbols;
  std::string_view strings;
};

// The ELF header of a CUBIN, checked: magic, ELF64 little-endian, machine CUDA, a section table
// inside the file.
Result<SectionTable> read_section_table(std::string_view elf) {
  const std::uint64_t total = elf.size();
  if (total < kElfHeaderSize || std::memcmp(elf.data(),
                                            "\x7f"
                                            "ELF",
                                            4) != 0) {
    return fail(Errc::corrupt, "not an ELF file (", std::to_string(total),
                " bytes, no ELF magic); a CUBIN is an ELF64 file: check the payload is a CUBIN, "
                "not PTX or LTO-IR.");
  }
  if (elf[4] != 2 || elf[5] != 1) {
    return fail(Errc::corrupt, "ELF file is not 64-bit little-endian (class ",
                std::to_string(static_cast<unsigned char>(elf[4])), ", data ",
                std::to_string(static_cast<unsigned char>(elf[5])),
                "); a CUBIN is ELF64 little-endian.");
  }
  const auto machine = load_le<std::uint16_t>(elf, 18);
  if (machine != kEmCuda) {
    return fail(Errc::corrupt, "ELF file is for machine ", std::to_string(machine),
                ", not CUDA (190): this is not a CUBIN.");
  }
  const auto shoff = load_le<std::uint64_t>(elf, 40);
  const std::uint64_t shentsize = load_le<std::uint16_t>(elf, 58);
  std::uint64_t shnum = load_le<std::uint16_t>(elf, 60);
  if (shoff == 0) return fail(Errc::corrupt, "CUBIN has no section table (e_shoff is 0).");
  if (shentsize < kSectionHeaderSize) {
    return fail(Errc::corrupt, "CUBIN section header size ", std::to_string(shentsize),
                " is below ", std::to_string(kSectionHeaderSize), ".");
  }
  if (!in_bounds(shoff, shentsize, total)) {
    return fail(Errc::corrupt, "CUBIN section table at offset ", std::to_string(shoff),
                " lies outside its ", std::to_string(total), " bytes (truncated?).");
  }
  if (shnum == 0) shnum = section_at(elf, shoff, shentsize, 0).size;  // extended numbering
  if (shnum == 0 || shnum > (total - shoff) / shentsize) {
    return fail(Errc::corrupt, "CUBIN section table (", std::to_string(shnum),
                " entries at offset ", std::to_string(shoff), ") does not fit in its ",
                std::to_string(total), " bytes (truncated?).");
  }
  return SectionTable{shoff, shentsize, shnum};
}

// The first SHT_SYMTAB section and the string table it links to.
Result<SymbolTable> find_symbol_table(std::string_view elf, const SectionTable& table) {
  const std::uint64_t total = elf.size();
  const auto [shoff, shentsize, shnum] = table;
  std::uint64_t symtab_index = shnum;
  for (std::uint64_t i = 0; i < shnum; ++i) {
    if (section_at(elf, shoff, shentsize, i).type == kShtSymtab) {
      symtab_index = i;
      break;
    }
  }
  if (symtab_index == shnum) return fail(Errc::corrupt, "CUBIN has no symbol table (SHT_SYMTAB).");
  const Section symtab = section_at(elf, shoff, shentsize, symtab_index);
  if (symtab.entsize < kSymbolSize) {
    return fail(Errc::corrupt, "CUBIN symbol size ", std::to_string(symtab.entsize), " is below ",
                std::to_string(kSymbolSize), ".");
  }
  if (!in_bounds(symtab.offset, symtab.size, total)) {
    return fail(Errc::corrupt, "CUBIN symbol table (", std::to_string(symtab.size),
                " bytes at offset ", std::to_string(symtab.offset), ") lies outside its ",
                std::to_string(total), " bytes.");
  }
  if (symtab.link >= shnum) {
    return fail(Errc::corrupt, "CUBIN symbol table links to section ", std::to_string(symtab.link),
                " of ", std::to_string(shnum), ".");
  }
  const Section strtab = section_at(elf, shoff, shentsize, symtab.link);
  if (strtab.type != kShtStrtab || !in_bounds(strtab.offset, strtab.size, total)) {
    return fail(Errc::corrupt, "CUBIN symbol string table (section ", std::to_string(symtab.link),
                ") is not a string table inside the file.");
  }
  const std::string_view strings =
      elf.substr(static_cast<std::size_t>(strtab.offset), static_cast<std::size_t>(strtab.size));
  return SymbolTable{symtab, strings};
}

// The defined kernels (entry functions) and variables of `table`, in table order.
Result<std::vector<CubinSymbolRef>> read_symbols(std::string_view elf, const SymbolTable& table) {
  std::vector<CubinSymbolRef> symbols;
  const auto& [symtab, strings] = table;
  const std::uint64_t count = symtab.size / symtab.entsize;
  symbols.reserve(static_cast<std::size_t>(count));  // in bounds: the table is inside `elf`
  for (std::uint64_t i = 1; i < count; ++i) {
    const auto at = static_cast<std::size_t>(symtab.offset + i * symtab.entsize);
    const auto name_offset = load_le<std::uint32_t>(elf, at);
    const auto info = load_le<std::uint8_t>(elf, at + 4);
    const auto other = load_le<std::uint8_t>(elf, at + 5);
    const auto shndx = load_le<std::uint16_t>(elf, at + 6);
    const auto size = load_le<std::uint64_t>(elf, at + 16);
    const auto type = static_cast<std::uint8_t>(info & 0xf);
    const bool kernel = type == kSttFunc && (other & kStoCudaEntry) != 0;
    const bool variable = type == kSttObject || type == kSttCudaObject;
    if ((!kernel && !variable) || shndx == kShnUndef) continue;
    if (name_offset >= strings.size()) {
      return fail(Errc::corrupt, "CUBIN symbol ", std::to_string(i), " names string offset ",
                  std::to_string(name_offset), " past its string table (",
                  std::to_string(strings.size()), " bytes).");
    }
    const std::size_t name_end = strings.find('\0', name_offset);
    if (name_end == std::string_view::npos) {
      return fail(Errc::corrupt, "CUBIN symbol ", std::to_string(i), " has an unterminated name.");
    }
    const std::string_view name = strings.substr(name_offset, name_end - name_offset);
    if (name.empty()) continue;
    symbols.push_back(CubinSymbolRef{name, !kernel, kernel ? 0 : size});
  }
  return symbols;
}

}  // namespace

Result<std::vector<CubinSymbolRef>> read_cubin_symbol_refs(std::string_view elf) {
  auto table = read_section_table(elf);
  if (!table) return std::move(table).error();
  auto symbols = find_symbol_table(elf, *table);
  if (!symbols) return std::move(symbols).error();
  return read_symbols(elf, *symbols);
}

Result<CubinSymbols> read_cubin_symbols(std::string_view elf) {
  auto refs = read_cubin_symbol_refs(elf);
  if (!refs.ok()) return std::move(refs).error();
  CubinSymbols symbols;
  for (const CubinSymbolRef& ref : *refs) {
    if (ref.variable) {
      symbols.variables.push_back(CubinVariable{std::string(ref.name), ref.size});
    } else {
      symbols.kernels.emplace_back(ref.name);
    }
  }
  std::sort(symbols.kernels.begin(), symbols.kernels.end());
  symbols.kernels.erase(std::unique(symbols.kernels.begin(), symbols.kernels.end()),
                        symbols.kernels.end());
  std::stable_sort(symbols.variables.begin(), symbols.variables.end(),
                   [](const CubinVariable& a, const CubinVariable& b) { return a.name < b.name; });
  symbols.variables.erase(
      std::unique(symbols.variables.begin(), symbols.variables.end(),
                  [](const CubinVariable& a, const CubinVariable& b) { return a.name == b.name; }),
      symbols.variables.end());
  return symbols;
}

bool payload_has_symbol(std::string_view payload, std::string_view kind_name,
                        std::string_view name) {
  if (kind_name == "ltoir") return true;
  if (kind_name == "ptx") return ptx_declares(payload, name);
  if (kind_name == "cubin") {
    auto symbols = read_cubin_symbols(payload);
    return symbols.ok() && (symbols->has_kernel(name) || symbols->has_variable(name));
  }
  return false;
}

}  // namespace cubby
