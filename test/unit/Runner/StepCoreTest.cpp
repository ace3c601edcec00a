//===- StepCoreTest.cpp - the step library's LLVM-free part ---------------===//
//
// muir::step (StepCore.h), which the GPU machine's step runner compiles:
// the manifest reader against manifests written in the test, and the CUDA
// graph policy against a recording stand-in for the CUDA runtime, so that
// when a CUDA step is captured, replayed or run op by op is checked on a
// machine without a GPU.
//
//===----------------------------------------------------------------------===//
#include "muir/Runner/StepCore.h"
#include "muir/Step.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace muir::step;

namespace {

TEST(Manifest, ReadsEveryKindOfArgument) {
  const char *text = "0 w param 64x32 f32\n"
                     "1 w.grad grad 64x32 f32\n"
                     "2 w.momentum state 64x32 f32\n"
                     "3 tokens data 16x8 f32 init_std=3.5355339059327379e-01\n"
                     "4 bias param scalar f32\n"
                     "5 muon.lr hyper scalar f64 2.0000000000000000e-02\n"
                     "6 step step-unused scalar i64\n"
                     "loss 3 layers.0.moe\n";
  Manifest m;
  ASSERT_EQ(parseManifest(text, m), "");
  ASSERT_EQ(m.arguments.size(), 7u);
  EXPECT_EQ(m.arguments[0].name, "w");
  EXPECT_EQ(m.arguments[0].role, MUIR_ROLE_PARAM);
  EXPECT_EQ(m.arguments[0].shape, (std::vector<int64_t>{64, 32}));
  EXPECT_EQ(m.arguments[0].numel(), 2048);
  EXPECT_EQ(m.arguments[1].role, MUIR_ROLE_GRAD);
  EXPECT_EQ(m.arguments[2].role, MUIR_ROLE_STATE);
  EXPECT_EQ(m.arguments[3].role, MUIR_ROLE_DATA);
  EXPECT_DOUBLE_EQ(m.arguments[3].initStd, 0.35355339059327379);
  EXPECT_TRUE(m.arguments[4].shape.empty());
  EXPECT_EQ(m.arguments[4].numel(), 1);
  EXPECT_EQ(m.arguments[5].role, MUIR_ROLE_HYPER);
  EXPECT_FALSE(m.arguments[5].isTensor());
  EXPECT_DOUBLE_EQ(m.arguments[5].defaultValue, 0.02);
  EXPECT_EQ(m.arguments[6].role, MUIR_ROLE_COUNTER);
  EXPECT_FALSE(m.readsCounter());
  ASSERT_EQ(m.losses.size(), 1u);
  EXPECT_EQ(m.losses[0].first, 3);
  EXPECT_EQ(m.losses[0].second, "layers.0.moe");

  ASSERT_EQ(parseManifest("0 step step scalar i64\n", m), "");
  EXPECT_TRUE(m.readsCounter());
}

TEST(Manifest, NamesTheBadLine) {
  Manifest m;
  struct Case {
    const char *text, *error;
  } cases[] = {
      {"0 w param 4xq f32\n",
       "manifest line 1 ('0 w param 4xq f32'): malformed shape '4xq'"},
      {"0 w param 4 f32\n2 v param 4 f32\n",
       "manifest line 2 ('2 v param 4 f32'): expected argument 1"},
      {"0 w weights 4 f32\n",
       "manifest line 1 ('0 w weights 4 f32'): unknown role 'weights'"},
      {"0 w param 4 f16\n",
       "manifest line 1 ('0 w param 4 f16'): unknown element type 'f16'"},
      {"0 lr hyper scalar f64\n", "manifest line 1 ('0 lr hyper scalar "
                                  "f64'): a hyperparameter without its "
                                  "default"},
      {"0 x data 4 f32 init_std=-1\n",
       "manifest line 1 ('0 x data 4 f32 init_std=-1'): malformed "
       "'init_std=-1'"},
      {"0 x data 4 f32 colour=red\n",
       "manifest line 1 ('0 x data 4 f32 colour=red'): unknown item "
       "'colour=red'"},
      {"0 w\n", "manifest line 1 ('0 w'): expected '<index> <name> <role> "
                "<shape> <type>'"},
      {"loss x y\n", "manifest line 1 ('loss x y'): expected 'loss <slot> "
                     "<layer>'"},
  };
  for (const Case &c : cases)
    EXPECT_EQ(parseManifest(c.text, m), c.error) << c.text;
  EXPECT_EQ(parseManifest(nullptr, m), "the step has no manifest");
}

// A stand-in for the CUDA runtime's graph calls: each appends a letter,
// the step's code 'x' (c: capture begins, e: it ends, l: launch).
std::string calls;
int begin() { return calls += 'c', 0; }
int end() { return calls += 'e', 0; }
int launch() { return calls += 'l', 0; }
int failing() { return calls += '!', 1; }
const char *lastError() { return "no graph today"; }

CudaRuntime recorder() {
  CudaRuntime rt;
  rt.graph_begin = begin;
  rt.graph_end = end;
  rt.graph_launch = launch;
  rt.last_error = lastError;
  return rt;
}

// Runs `n` steps; returns the calls, one step per '|'.
std::string runSteps(GraphRunner &g, int n, bool counterUsed, bool hyperUsed,
                     std::vector<std::vector<double>> hyper = {}) {
  calls.clear();
  GraphRunner::Invoke invoke = [] {
    calls += 'x';
    return std::string();
  };
  for (int s = 0; s < n; ++s) {
    std::vector<double> h = hyper.empty() ? std::vector<double>{}
                                          : hyper[static_cast<size_t>(s)];
    EXPECT_EQ(g.prepare(invoke, counterUsed, hyperUsed, h), "");
    EXPECT_EQ(g.launch(invoke), "");
    calls += '|';
  }
  return calls;
}

TEST(GraphRunner, FirstOpByOpThenOneCaptureReplayed) {
  CudaRuntime rt = recorder();
  GraphRunner g(rt, /*graphs=*/true);
  EXPECT_EQ(runSteps(g, 4, false, false), "x|cxel|l|l|");
  EXPECT_TRUE(g.replayed());
}

TEST(GraphRunner, ACounterOrNewHyperparametersCaptureAgain) {
  CudaRuntime rt = recorder();
  GraphRunner counter(rt, true);
  EXPECT_EQ(runSteps(counter, 3, /*counterUsed=*/true, false),
            "x|cxel|cxel|");
  GraphRunner hyper(rt, true);
  // A constant learning rate replays; a new one captures again.
  EXPECT_EQ(runSteps(hyper, 4, false, /*hyperUsed=*/true,
                     {{0.1}, {0.1}, {0.1}, {0.05}}),
            "x|cxel|l|cxel|");
  // Hyperparameters the step does not read change nothing.
  GraphRunner unread(rt, true);
  EXPECT_EQ(runSteps(unread, 3, false, false, {{0.1}, {0.2}, {0.3}}),
            "x|cxel|l|");
}

TEST(GraphRunner, RebindingCapturesAgain) {
  CudaRuntime rt = recorder();
  GraphRunner g(rt, true);
  EXPECT_EQ(runSteps(g, 2, false, false), "x|cxel|");
  g.invalidate();
  EXPECT_EQ(runSteps(g, 2, false, false), "cxel|l|");
}

// The runtime holds one graph per process: two steps that take turns
// capture again each time, since each replaced the other's graph.
TEST(GraphRunner, TwoStepsOfOneProcessDoNotReplayEachOthersGraph) {
  CudaRuntime rt = recorder();
  GraphRunner a(rt, true), b(rt, true);
  EXPECT_EQ(runSteps(a, 2, false, false), "x|cxel|");
  EXPECT_EQ(runSteps(b, 2, false, false), "x|cxel|");
  EXPECT_EQ(runSteps(a, 2, false, false), "cxel|l|");
  EXPECT_EQ(runSteps(b, 1, false, false), "cxel|");
}

TEST(GraphRunner, WithoutGraphsEveryStepRunsOpByOp) {
  CudaRuntime rt = recorder();
  GraphRunner g(rt, /*graphs=*/false);
  EXPECT_EQ(runSteps(g, 3, true, true, {{1}, {2}, {3}}), "x|x|x|");
  EXPECT_FALSE(g.replayed());
}

TEST(GraphRunner, FailuresAreReportedAndTheCaptureEnds) {
  CudaRuntime rt = recorder();
  GraphRunner g(rt, true);
  GraphRunner::Invoke ok = [] { return std::string(); };
  ASSERT_EQ(g.prepare(ok, false, false, {}), "");
  ASSERT_EQ(g.launch(ok), "");
  // The step fails under capture: its error, and the capture was ended.
  calls.clear();
  GraphRunner::Invoke bad = [] { return std::string("execution failed"); };
  EXPECT_EQ(g.prepare(bad, false, false, {}), "execution failed");
  EXPECT_EQ(calls, "ce");
  // The runtime refuses to capture: its last error.
  rt.graph_begin = failing;
  EXPECT_EQ(g.prepare(ok, false, false, {}),
            "capturing the step's CUDA graph: no graph today");
  // After a failed capture there is no graph to replay: the next run
  // captures again rather than replaying nothing.
  rt.graph_begin = begin;
  calls.clear();
  ASSERT_EQ(g.prepare(ok, false, false, {}), "");
  EXPECT_EQ(calls, "ce");
  rt.graph_launch = failing;
  EXPECT_EQ(g.launch(ok), "replaying the step's CUDA graph: no graph today");
  // A replay that failed (the runtime lost the graph) captures again next.
  rt.graph_launch = launch;
  calls.clear();
  ASSERT_EQ(g.prepare(ok, false, false, {}), "");
  ASSERT_EQ(g.launch(ok), "");
  EXPECT_EQ(calls, "cel");
}

} // namespace
