//===- EnumFlags.h - muir's enum-valued flags and options -------*- C++ -*-===//
//
// The command-line parser of muir's enum-valued flags and pass options (an
// unknown value's error lists the valid ones), and the helpers that read an
// enum's llvm::cl::values list back: its names, "expected one of: ...", a
// value by name. Below every library: LLVM's CommandLine only.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_SUPPORT_ENUMFLAGS_H
#define MUIR_SUPPORT_ENUMFLAGS_H

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <utility>

namespace mlir::muir {
using llvm::SmallVector;
using llvm::StringRef;

namespace detail {
/// Takes what cl::values(...) adds to an option: each value's name and
/// number.
struct EnumValueList {
  struct Parser {
    SmallVector<std::pair<StringRef, int>> values;
    template <class DT>
    void addLiteralOption(StringRef name, const DT &value, StringRef) {
      values.push_back({name, static_cast<int>(value)});
    }
  } parser;
  Parser &getParser() { return parser; }
  explicit EnumValueList(const llvm::cl::ValuesClass &list) {
    list.apply(*this);
  }
};
} // namespace detail

/// The names of a list of enum values (targetValues() and the like), in
/// their order.
inline SmallVector<StringRef> valueNames(const llvm::cl::ValuesClass &values) {
  SmallVector<StringRef> names;
  for (auto &[name, value] : detail::EnumValueList(values).parser.values)
    names.push_back(name);
  return names;
}

/// "expected one of: a, b, c": what every enum-valued flag, pass option
/// and step-library option says of a value it does not know.
inline std::string expectedOneOf(const llvm::cl::ValuesClass &values) {
  std::string text = "expected one of: ";
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(valueNames(values), os);
  return text;
}

/// `text` as one of `values` (the flags' own list), if it is one.
template <typename E>
std::optional<E> parseEnumValue(const llvm::cl::ValuesClass &values,
                                StringRef text) {
  for (auto &[name, value] : detail::EnumValueList(values).parser.values)
    if (name == text)
      return static_cast<E>(value);
  return std::nullopt;
}

/// The command-line parser of muir's enum-valued flags and pass options:
/// LLVM's cl::parser<E> (which MLIR's pass options wrap), except that an
/// unknown value's error lists the valid ones. MUIR_ENUM_FLAG(E) makes it
/// the parser of every cl::opt<E> and pass Option<E>.
template <typename E>
class EnumParser : public llvm::cl::generic_parser_base {
protected:
  class OptionInfo : public GenericOptionInfo {
  public:
    OptionInfo(StringRef name, E v, StringRef helpStr)
        : GenericOptionInfo(name, helpStr), V(v) {}
    llvm::cl::OptionValue<E> V;
  };
  SmallVector<OptionInfo, 8> Values;

public:
  EnumParser(llvm::cl::Option &o) : generic_parser_base(o) {}
  using parser_data_type = E;

  unsigned getNumOptions() const override { return unsigned(Values.size()); }
  StringRef getOption(unsigned n) const override { return Values[n].Name; }
  StringRef getDescription(unsigned n) const override {
    return Values[n].HelpStr;
  }
  const llvm::cl::GenericOptionValue &
  getOptionValue(unsigned n) const override {
    return Values[n].V;
  }

  /// True on error.
  bool parse(llvm::cl::Option &o, StringRef argName, StringRef arg, E &v) {
    StringRef value = Owner.hasArgStr() ? arg : argName;
    for (const OptionInfo &info : Values)
      if (info.Name == value) {
        v = info.V.getValue();
        return false;
      }
    std::string message = "unknown value '" + value.str() +
                          "'; expected one of: ";
    llvm::raw_string_ostream os(message);
    llvm::interleaveComma(
        llvm::map_range(Values, [](const OptionInfo &i) { return i.Name; }),
        os);
    return o.error(message);
  }

  template <class DT>
  void addLiteralOption(StringRef name, const DT &v, StringRef helpStr) {
    Values.push_back(OptionInfo(name, static_cast<E>(v), helpStr));
    AddLiteralOption(Owner, name);
  }
  void removeLiteralOption(StringRef name) {
    unsigned n = findOption(name);
    assert(n != Values.size() && "Option not found!");
    Values.erase(Values.begin() + n);
  }
};

} // namespace mlir::muir

/// Makes EnumParser<E> the parser of every cl::opt<E> (and MLIR pass option
/// of type E); at namespace scope, before the first such option.
#define MUIR_ENUM_FLAG(E)                                                      \
  namespace llvm::cl {                                                         \
  template <> class parser<E> : public ::mlir::muir::EnumParser<E> {           \
  public:                                                                      \
    using ::mlir::muir::EnumParser<E>::EnumParser;                             \
  };                                                                           \
  }


#endif // MUIR_SUPPORT_ENUMFLAGS_H
