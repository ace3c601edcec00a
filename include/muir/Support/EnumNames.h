//===- EnumNames.h - an enum's names, declared once -------------*- C++ -*-===//
//
// An enum that flags, pass options, reports and messages spell by name is
// declared once as a table of EnumName (its values' names and help), from
// which its stringify, its symbolize and its llvm::cl::values list (the
// flags' and pass options' accepted values) are derived.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_SUPPORT_ENUMNAMES_H
#define MUIR_SUPPORT_ENUMNAMES_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

#include <cstddef>
#include <optional>
#include <utility>

namespace mlir::muir {

/// One value of an enum: its name (in flags, descriptions and reports)
/// and its help (in --help).
template <typename E> struct EnumName {
  E value;
  llvm::StringLiteral name;
  llvm::StringLiteral help;
};

/// The name of `value` in `table` ("" if the table has none).
template <typename E, size_t N>
llvm::StringRef enumName(const EnumName<E> (&table)[N], E value) {
  for (const EnumName<E> &e : table)
    if (e.value == value)
      return e.name;
  return "";
}

/// The value named `name` in `table`, if there is one.
template <typename E, size_t N>
std::optional<E> enumValue(const EnumName<E> (&table)[N],
                           llvm::StringRef name) {
  for (const EnumName<E> &e : table)
    if (e.name == name)
      return e.value;
  return std::nullopt;
}

namespace detail {
template <typename E, size_t N, size_t... I>
llvm::cl::ValuesClass enumValues(const EnumName<E> (&table)[N],
                                 std::index_sequence<I...>) {
  return llvm::cl::values(llvm::cl::OptionEnumValue{
      table[I].name, static_cast<int>(table[I].value), table[I].help}...);
}
} // namespace detail

/// The table as the values a cl::opt<E> or pass Option<E> accepts.
template <typename E, size_t N>
llvm::cl::ValuesClass enumValues(const EnumName<E> (&table)[N]) {
  return detail::enumValues(table, std::make_index_sequence<N>());
}

} // namespace mlir::muir

#endif // MUIR_SUPPORT_ENUMNAMES_H
