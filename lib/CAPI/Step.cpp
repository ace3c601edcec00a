//===- Step.cpp - the C API (muir/Step.h) over muir::runner::Step ---------===//
//
// The C API of the step library: error strings instead of exits, plain
// structs for the arguments. Every entry point catches what the C++ side
// reports (llvm::Error, diagnostics) and keeps it for
// muir_step_last_error().
//
//===----------------------------------------------------------------------===//
#include "muir/Step.h"

#include "muir/Import/Description.h"
#include "muir/Runner/Step.h"
#include "muir/Version.h"
#include "muir-rt/Runtime.h"

#include "llvm/Support/raw_ostream.h"

#include <deque>
#include <string>

using namespace mlir::muir::runner;

// The C API spells the runner's roles (muir/Runner/Role.h) as they are.
static constexpr bool sameRole(MuirArgumentRole c, Role r) {
  return static_cast<int32_t>(c) == static_cast<int32_t>(r);
}
static_assert(sameRole(MUIR_ROLE_PARAM, RoleParam) &&
                  sameRole(MUIR_ROLE_GRAD, RoleGrad) &&
                  sameRole(MUIR_ROLE_STATE, RoleState) &&
                  sameRole(MUIR_ROLE_DATA, RoleData) &&
                  sameRole(MUIR_ROLE_COUNTER, RoleCounter) &&
                  sameRole(MUIR_ROLE_HYPER, RoleHyper),
              "muir/Step.h's MuirArgumentRole is the runner's Role");

struct MuirStep {
  std::unique_ptr<Step> step;
};

static thread_local std::string lastError;

static int failWith(llvm::Error e, const std::string &prefix = "") {
  std::string msg = llvm::toString(std::move(e));
  lastError = prefix.empty() ? msg
              : msg.empty()  ? prefix
                             : prefix + "\n" + msg;
  return 1;
}

/// A step from `make(options, diagnostics)`, or null with the options'
/// error, or the diagnostics (file:line:col) followed by the error's line.
template <typename Make>
static MuirStep *makeStep(const char *options, Make make) {
  auto parsed = StepOptions::parse(options ? options : "");
  if (!parsed) {
    failWith(parsed.takeError());
    return nullptr;
  }
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  auto step = make(*parsed, os);
  if (!step) {
    failWith(step.takeError(), llvm::StringRef(diagnostics).rtrim().str());
    return nullptr;
  }
  return new MuirStep{std::move(*step)};
}

namespace {
/// NUL-terminated copies of the strings a C table points to: a deque, whose
/// elements stay where they are as it grows.
struct KeptStrings {
  std::deque<std::string> all;
  const char *keep(llvm::StringRef text) {
    all.push_back(text.str());
    return all.back().c_str();
  }
};

/// The registry's entries as C structs (their strings NUL-terminated
/// copies), made once.
struct OptimizerTable {
  KeptStrings strings;
  std::vector<std::vector<const char *>> suffixes, keys, hyper,
      settingKeys, settingChoices;
  std::vector<std::vector<int32_t>> rows, settingUnset;
  std::vector<std::vector<double>> settingDefaults;
  std::vector<MuirOptimizerInfo> infos;

  OptimizerTable() {
    auto all = mlir::muir::desc::optimizers();
    size_t n = all.size();
    suffixes.resize(n);
    keys.resize(n);
    hyper.resize(n);
    rows.resize(n);
    settingKeys.resize(n);
    settingChoices.resize(n);
    settingUnset.resize(n);
    settingDefaults.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const mlir::muir::desc::OptimizerInfo &o = all[i];
      auto keep = [&](llvm::StringRef text) { return strings.keep(text); };
      const char *name = keep(o.name);
      for (const mlir::muir::desc::OptimizerState &st : o.state) {
        suffixes[i].push_back(keep(st.suffix));
        keys[i].push_back(keep(st.key));
        rows[i].push_back(st.rows ? 1 : 0);
      }
      for (llvm::StringRef h : o.hyper)
        hyper[i].push_back(keep(h));
      for (const mlir::muir::desc::OptimizerSetting &st : o.settings) {
        settingKeys[i].push_back(keep(st.key));
        settingDefaults[i].push_back(st.value);
        settingChoices[i].push_back(st.choice.empty() ? nullptr
                                                      : keep(st.choice));
        settingUnset[i].push_back(st.unset ? 1 : 0);
      }
      infos.push_back({name, o.orthogonalises ? 1 : 0, o.stepCount ? 1 : 0,
                       static_cast<int32_t>(o.state.size()),
                       suffixes[i].data(), keys[i].data(), rows[i].data(),
                       static_cast<int32_t>(o.hyper.size()),
                       hyper[i].data(),
                       static_cast<int32_t>(o.settings.size()),
                       settingKeys[i].data(), settingDefaults[i].data(),
                       settingChoices[i].data(), settingUnset[i].data()});
    }
  }
};

const OptimizerTable &optimizerTable() {
  static const OptimizerTable table;
  return table;
}

/// The settings' specs as C structs, made once.
struct SettingTable {
  KeptStrings strings;
  std::vector<std::vector<const char *>> choices;
  std::vector<MuirSettingInfo> infos;

  SettingTable() {
    auto all = mlir::muir::desc::settingSpecs();
    auto keep = [&](llvm::StringRef text) { return strings.keep(text); };
    choices.resize(all.size());
    for (auto [i, s] : llvm::enumerate(all)) {
      const char *key = keep(s.key);
      for (llvm::StringRef c : s.choices)
        choices[i].push_back(keep(c));
      infos.push_back({key, static_cast<int32_t>(s.kind), s.low, s.high,
                       s.lowIncluded ? 1 : 0, s.highIncluded ? 1 : 0,
                       static_cast<int32_t>(s.choices.size()),
                       choices[i].data()});
    }
  }
};

const SettingTable &settingTable() {
  static const SettingTable table;
  return table;
}

/// The step options (muir/Driver/Options.def) as C structs, made once.
struct OptionTable {
  KeptStrings strings;
  std::vector<std::vector<const char *>> choices;
  std::vector<MuirOptionInfo> infos;

  OptionTable() {
    auto all = mlir::muir::stepOptions();
    auto keep = [&](llvm::StringRef text) { return strings.keep(text); };
    choices.resize(all.size());
    for (auto [i, o] : llvm::enumerate(all)) {
      const char *name = keep(o.name), *kind = keep(o.kind),
                 *value = keep(o.defaultText), *help = keep(o.help);
      for (llvm::StringRef c : o.choices)
        choices[i].push_back(keep(c));
      infos.push_back({name, kind, value,
                       static_cast<int32_t>(o.choices.size()),
                       choices[i].data(), o.user ? 1 : 0, help});
    }
  }
};

const OptionTable &optionTable() {
  static const OptionTable table;
  return table;
}

/// Entry `index` of a table the C API gives out, into `out`; non-zero,
/// with `what`'s error, when it is out of range.
template <typename Info>
int tableEntry(const char *what, const std::vector<Info> &infos,
               int32_t index, Info *out) {
  if (index < 0 || static_cast<size_t>(index) >= infos.size() || !out) {
    lastError = std::string(what) + ": index " + std::to_string(index) +
                " is not in [0, " + std::to_string(infos.size()) + ")";
    return 1;
  }
  *out = infos[index];
  return 0;
}
} // namespace

// The C API spells the setting kinds as the reader's.
static_assert(
    MUIR_SETTING_REAL ==
            static_cast<int>(mlir::muir::desc::SettingSpec::Kind::Real) &&
        MUIR_SETTING_INTEGER ==
            static_cast<int>(mlir::muir::desc::SettingSpec::Kind::Integer) &&
        MUIR_SETTING_BOOLEAN ==
            static_cast<int>(mlir::muir::desc::SettingSpec::Kind::Boolean) &&
        MUIR_SETTING_CHOICE ==
            static_cast<int>(mlir::muir::desc::SettingSpec::Kind::Choice) &&
        MUIR_SETTING_REAL_LIST ==
            static_cast<int>(mlir::muir::desc::SettingSpec::Kind::RealList),
    "MuirSettingKind is SettingSpec::Kind");

extern "C" {

const char *muir_step_version(void) { return MUIR_VERSION_STRING; }

int32_t muir_num_optimizers(void) {
  return static_cast<int32_t>(optimizerTable().infos.size());
}

int32_t muir_num_settings(void) {
  return static_cast<int32_t>(settingTable().infos.size());
}

int muir_setting_info(int32_t index, MuirSettingInfo *out) {
  return tableEntry("muir_setting_info", settingTable().infos, index, out);
}

int32_t muir_num_options(void) {
  return static_cast<int32_t>(optionTable().infos.size());
}

int muir_option_info(int32_t index, MuirOptionInfo *out) {
  return tableEntry("muir_option_info", optionTable().infos, index, out);
}

int muir_optimizer_info(int32_t index, MuirOptimizerInfo *out) {
  return tableEntry("muir_optimizer_info", optimizerTable().infos, index,
                    out);
}

const char *muir_step_last_error(void) { return lastError.c_str(); }

MuirStep *muir_step_compile(const char *source, size_t size,
                            const char *filename, const char *options) {
  if (!source || !filename) {
    lastError = "muir_step_compile: source and filename are required";
    return nullptr;
  }
  return makeStep(options, [&](const StepOptions &o, llvm::raw_ostream &os) {
    return Step::compile(llvm::StringRef(source, size), filename, o, os);
  });
}

MuirStep *muir_step_open(const char *path, const char *options) {
  if (!path) {
    lastError = "muir_step_open: a path is required";
    return nullptr;
  }
  return makeStep(options, [&](const StepOptions &o, llvm::raw_ostream &) {
    return Step::open(path, o);
  });
}

int32_t muir_step_num_arguments(const MuirStep *step) {
  return step ? static_cast<int32_t>(step->step->arguments().size()) : 0;
}

int muir_step_argument(const MuirStep *step, int32_t index,
                       MuirStepArgument *out) {
  if (!step || !out || index < 0 ||
      static_cast<size_t>(index) >= step->step->arguments().size()) {
    lastError = "muir_step_argument: index out of range";
    return 1;
  }
  const Argument &a = step->step->arguments()[index];
  out->name = a.name.c_str();
  out->role = a.role;
  out->rank = static_cast<int32_t>(a.shape.size());
  out->shape = a.shape.data();
  out->global_shape = a.globalShape.data();
  out->default_value = a.defaultValue;
  out->hyper_index = a.hyperIndex;
  out->updated = a.updated;
  out->dtype = a.isTensor()                   ? (a.i64   ? MUIR_DTYPE_I64
                                                : a.f64 ? MUIR_DTYPE_F64
                                                        : MUIR_DTYPE_F32)
               : a.role == MUIR_ROLE_COUNTER ? MUIR_DTYPE_I64
                                             : MUIR_DTYPE_F64;
  return 0;
}

int32_t muir_step_find(const MuirStep *step, const char *name) {
  return step && name ? step->step->find(name) : -1;
}

int32_t muir_step_num_hyper(const MuirStep *step) {
  return step ? step->step->numHyper() : 0;
}

int32_t muir_step_rank(const MuirStep *step) {
  return step ? static_cast<int32_t>(step->step->rank()) : 0;
}

int32_t muir_step_world_size(const MuirStep *step) {
  return step ? static_cast<int32_t>(step->step->devices()) : 1;
}

int muir_step_bind(MuirStep *step, int32_t index, void *data) {
  if (!step) {
    lastError = "muir_step_bind: no step";
    return 1;
  }
  if (llvm::Error e = step->step->bind(index, data))
    return failWith(std::move(e));
  return 0;
}

int muir_step_first_nonfinite(const MuirStep *step, int32_t role,
                              int32_t *index, int64_t *element) {
  if (!step || !index || !element) {
    lastError = "muir_step_first_nonfinite: no step or no result pointers";
    return 1;
  }
  auto found = step->step->firstNonFinite(role);
  if (!found)
    return failWith(found.takeError());
  *index = found->first;
  *element = found->second;
  return 0;
}

int muir_step_run(MuirStep *step, int64_t counter, const double *hyper,
                  int32_t num_hyper, void *stream) {
  if (!step) {
    lastError = "muir_step_run: no step";
    return 1;
  }
  llvm::ArrayRef<double> values;
  if (hyper)
    values = llvm::ArrayRef<double>(hyper, num_hyper);
  if (llvm::Error e = step->step->run(counter, values, stream,
                                      /*wait=*/stream == nullptr))
    return failWith(std::move(e));
  return 0;
}

size_t muir_step_release_memory(void) { return muirrt_arena_release_memory(); }

size_t muir_step_held_memory(void) { return muirrt_arena_bytes(); }

int muir_step_nccl_unique_id(char *hex) {
  auto id = ncclUniqueId();
  if (!id)
    return failWith(id.takeError());
  std::copy(id->begin(), id->end(), hex);
  hex[id->size()] = '\0';
  return 0;
}

int muir_step_set_transport(MuirExchangeFn exchange, void *context,
                            int32_t rank, int32_t size) {
  if (muirrt_dist_set_transport(exchange, context, rank, size)) {
    lastError = std::string("muir_step_set_transport: ") +
                muirrt_last_error();
    return 1;
  }
  return 0;
}

void muir_step_close(MuirStep *step) { delete step; }

} // extern "C"
