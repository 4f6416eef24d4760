// Analyzer tests: categories, overlap, busy/idle, phases, shapes, balance — exact known answers.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "calibrate/trace/analysis.hpp"
#include "test_util.hpp"
#include "trace_gen.hpp"

namespace fusesim::trace {
namespace {

using test::TempDir;
using test::write_text;

const PhaseStats& phase_of(const RankReport& r, const std::string& phase) {
  for (const auto& p : r.phases)
    if (p.phase == phase) return p;
  throw std::runtime_error("no phase " + phase);
}

// Two streams: compute [0,20) on stream 7 (a GEMM then an elementwise kernel), an NCCL all-reduce
// [10,30) on stream 8, then a norm [40,45) after a 10 us idle gap. Overlap = 10 of 20 us.
const char* kOverlapTrace = R"json({"traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_cublas", "ts": 1000, "dur": 15, "args": {"stream": 7, "device": 0}},
  {"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4>", "ts": 1015, "dur": 5, "args": {"stream": 7, "device": 0}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "ts": 1010, "dur": 20, "args": {"stream": 8, "device": 0}},
  {"ph": "X", "cat": "kernel", "name": "void vllm::rms_norm_kernel<c10::BFloat16>", "ts": 1040, "dur": 5, "args": {"stream": 7, "device": 0}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "ts": 1020, "dur": 4, "args": {"stream": 9, "device": 0}}
]})json";

TEST(TraceAnalyze, HandBuiltOverlapAndCategories) {
  TempDir d;
  write_text(d.file("t.json"), kOverlapTrace);
  auto files = read_trace(d.file("t.json"));
  auto rep = analyze(files, CategoryTable::builtin(), AnalyzeOptions{}, "all", d.file("t.json"));
  ASSERT_EQ(rep.ranks.size(), 1u);
  const auto& all = phase_of(rep.ranks[0], "all");
  EXPECT_DOUBLE_EQ(all.wall_us, 45.0);
  EXPECT_DOUBLE_EQ(all.busy_us, 35.0);
  EXPECT_DOUBLE_EQ(all.idle_us, 10.0);
  EXPECT_EQ(all.idle_gaps, 1);
  EXPECT_DOUBLE_EQ(all.largest_gap_us, 10.0);
  EXPECT_DOUBLE_EQ(all.comm_us, 20.0);
  EXPECT_DOUBLE_EQ(all.comm_busy_us, 20.0);
  EXPECT_DOUBLE_EQ(all.comm_overlap_us, 10.0);  // the memcpy on stream 9 is a copy, not compute
  EXPECT_DOUBLE_EQ(all.overlap_fraction(), 0.5);
  EXPECT_EQ(all.streams, (std::vector<int64_t>{7, 8, 9}));
  EXPECT_EQ(all.by_category.at("gemm").count, 1);
  EXPECT_DOUBLE_EQ(all.by_category.at("gemm").total_us, 15.0);
  EXPECT_DOUBLE_EQ(all.by_category.at("elementwise").total_us, 5.0);
  EXPECT_DOUBLE_EQ(all.by_category.at("norm_quant").total_us, 5.0);
  EXPECT_DOUBLE_EQ(all.by_category.at("copy").total_us, 4.0);
  EXPECT_EQ(all.by_family.at("gemm/cublas").count, 1);
  EXPECT_EQ(all.by_family.at("communication/nccl").count, 1);
}

TEST(TraceAnalyze, CategoryRulesCoverTheSeedKernels) {
  auto t = CategoryTable::builtin();
  auto cat = [&](const std::string& n) {
    auto c = t.classify(n, GpuOpKind::kernel);
    return t.category(c.category).name + "/" + c.family;
  };
  EXPECT_EQ(cat("void aiter::cross_device_reduce_2stage<__hip_bfloat16, 8>(...)"), "communication/custom_ar");
  EXPECT_EQ(cat("rcclGenericKernel<1, false>(ncclDevComm*)"), "communication/rccl");
  EXPECT_EQ(cat("ncclSymkDevKernel_AllReduce"), "communication/nccl");
  EXPECT_EQ(cat("void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_oneshot_lamport<...>"), "communication/custom_ar");
  EXPECT_EQ(cat("void deep_ep::intranode::dispatch<8, 768>(...)"), "communication/deepep");
  EXPECT_EQ(cat("mori::moe::EpDispatchIntraNodeKernel"), "communication/mori");
  EXPECT_EQ(cat("Cijk_Alik_Bljk_BBS_BH_MT16x64x256_MI16x16x1_SN"), "gemm/hipblaslt");
  EXPECT_EQ(cat("deep_gemm::sm90_fp8_gemm_1d2d_impl<...>"), "gemm/deepgemm");
  EXPECT_EQ(cat("nvjet_tst_64x32_64x16_2x1_2cta"), "gemm/cublas");
  EXPECT_EQ(cat("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>"), "gemm/cutlass");
  EXPECT_EQ(cat("_gemm_a8w8_blockscale_kernel"), "gemm/aiter");
  EXPECT_EQ(cat("fused_moe_kernel"), "moe_gemm/triton");
  EXPECT_EQ(cat("ck_tile::kentry<moe_mxgemm_2lds<...>>"), "moe_gemm/ck");
  EXPECT_EQ(cat("count_and_sort_expert_tokens_kernel"), "moe_routing/routing");
  EXPECT_EQ(cat("mla_a8w8_qh16_qseqlen1_gqaratio16_ps"), "attention/mla");
  EXPECT_EQ(cat("void flashinfer::BatchPrefillWithPagedKVCacheKernel<...>"), "attention/flashinfer");
  EXPECT_EQ(cat("void flash::flash_fwd_splitkv_kernel<...>"), "attention/flash");
  EXPECT_EQ(cat("per_token_group_quant_8bit_kernel"), "norm_quant/quant");
  EXPECT_EQ(cat("something_never_seen"), "other/");
  EXPECT_EQ(t.category(t.classify("Memcpy HtoD (Pinned -> Device)", GpuOpKind::memcpy).category).name, "copy");
}

// Training and ROCm kernel families (one name of each, as their libraries name them).
TEST(TraceAnalyze, CategoryRulesCoverTrainingAndRocmFamilies) {
  auto t = CategoryTable::builtin();
  auto cat = [&](const std::string& n) {
    auto c = t.classify(n, GpuOpKind::kernel);
    return t.category(c.category).name + "/" + c.family;
  };
  // cuDNN convolutions (implicit GEMM, winograd, FFT, direct), its layout transforms, batch norm
  EXPECT_EQ(cat("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16"), "conv/cudnn");
  EXPECT_EQ(cat("void cutlass_cudnn_infer::Kernel<cutlass_tensorop_s1688dgrad_optimized_tf32_64x128_32x3_nhwc_align4>"), "conv/cudnn");
  EXPECT_EQ(cat("_ZN19cutlass_cudnn_train6KernelINS_4conv6kernel23ImplicitGemmConvolutionINS1_11threadblock"), "conv/cudnn");
  EXPECT_EQ(cat("cudnn_infer_ampere_scudnn_128x64_relu_xregs_large_nn_v1"), "conv/cudnn");
  EXPECT_EQ(cat("void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>(...)"), "conv/cudnn");
  EXPECT_EQ(cat("void fft2d_r2c_32x32<float, false, 0u, false>(float2*, float const*, int)"), "conv/cudnn");
  EXPECT_EQ(cat("void cudnn::cnn::conv2d_grouped_direct_kernel<false, true, false, false, 0, 0, int, float>"), "conv/cudnn");
  EXPECT_EQ(cat("void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, (cudnnKernelDataType_t)2>"), "conv/cudnn_layout");
  EXPECT_EQ(cat("void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128, true, 1>(float, float)"), "norm_quant/batchnorm");
  EXPECT_EQ(cat("void at::native::batch_norm_collect_statistics_kernel<at::native::InvStd, float>"), "norm_quant/batchnorm");
  // FBGEMM embeddings, ATen's embedding
  EXPECT_EQ(cat("void split_embedding_codegen_forward_unweighted_kernel<float, float, float, long, 2ul>"), "embedding/fbgemm");
  EXPECT_EQ(cat("void permute_pooled_embs_kernel<float>(float const*, long const*)"), "embedding/fbgemm");
  EXPECT_EQ(cat("void fbgemm_gpu::_block_bucketize_sparse_features_cuda_kernel2<false, false>"), "embedding/fbgemm");
  EXPECT_EQ(cat("void at::native::(anonymous namespace)::embedding_backward_feature_kernel<float, float, long>"), "embedding/aten");
  // multi_tensor_apply optimisers
  EXPECT_EQ(cat("void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>, float>"), "optimizer/multi_tensor");
  EXPECT_EQ(cat("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>, FusedAdamMathFunctor<float, 4>>"), "optimizer/multi_tensor");
  // CUB and rocPRIM sorts and scans
  EXPECT_EQ(cat("void cub::DeviceRadixSortOnesweepKernel<cub::DeviceRadixSortPolicy<long, int, int>::Policy800>"), "sort_scan/cub");
  EXPECT_EQ(cat("void at_cuda_detail::cub::DeviceScanKernel<at_cuda_detail::cub::AgentScanPolicy<128, 15, long>>"), "sort_scan/cub");
  EXPECT_EQ(cat("void rocprim::ROCPRIM_300000_NS::detail::onesweep_iteration_kernel<rocprim::default_config>"), "sort_scan/rocprim");
  // Triton fused kernels (torch.compile), a Triton template GEMM
  EXPECT_EQ(cat("triton__0d1d2d3d4d5d6d7d8d9d10d11d12d13d14"), "elementwise/triton");
  EXPECT_EQ(cat("triton_poi_fused_add_mul_sigmoid_0"), "elementwise/triton");
  EXPECT_EQ(cat("triton_tem_fused_mm_0"), "gemm/triton");
  // ROCm: MIOpen convolutions and batch norm, hipBLASLt, Composable Kernel GEMM and convolution
  EXPECT_EQ(cat("miopenSp3AsmConv_v21_1_3_gfx9_fp32_stride1"), "conv/miopen");
  EXPECT_EQ(cat("naive_conv_ab_nonpacked_fwd_nchw_float_double_float"), "conv/miopen");
  EXPECT_EQ(cat("igemm_fwd_gtcx_nchw_fp32_bx0_ex1_bt128x128x16_wt32x32x2_ws1x1_wr2x2"), "conv/miopen");
  EXPECT_EQ(cat("MIOpenBatchNormFwdTrainSpatial"), "norm_quant/batchnorm");
  EXPECT_EQ(cat("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0"), "gemm/hipblaslt");
  EXPECT_EQ(cat("void ck::kernel_gemm_xdl_cshuffle_v1<ck::GridwiseGemm_k0mk1_k0nk1_mn_xdl_cshuffle_v1<...>>"), "gemm/ck");
  EXPECT_EQ(cat("void ck::kernel_grouped_conv_fwd_multiple_d_xdl_cshuffle<...>"), "conv/ck");
  EXPECT_EQ(cat("Op2dTensorGeneric"), "elementwise/miopen");
  EXPECT_EQ(cat("void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>(int)"), "elementwise/pooling");
}

// Names of any length are matched whole, in linear time (RE2, hw::NamePattern; std::regex's
// recursive backtracking overflowed the stack on a 40 KB name, so rules used to see the first 4096
// bytes only): a family marker past 40 KB is found, a custom step pattern runs on a 40 KB name.
TEST(TraceAnalyze, LongNamesAreMatchedWhole) {
  auto t = CategoryTable::builtin();
  std::string name = "void cutlass::Kernel2<" + std::string(40000, 'x') + ">";
  auto c = t.classify(name, GpuOpKind::kernel);
  EXPECT_EQ(t.category(c.category).name, "gemm");
  auto late = t.classify("void k<" + std::string(40000, 'x') + ">ncclDevKernel_AllReduce", GpuOpKind::kernel);
  EXPECT_EQ(t.category(late.category).name, "communication");
  EXPECT_EQ(t.gemm_rule("aten::mm" + std::string(40000, ' ')), nullptr);  // full match: trailing text is not aten::mm
  StepMatcher dflt(R"(ProfilerStep#\d+)");
  EXPECT_TRUE(dflt.scanner());
  EXPECT_TRUE(dflt.match("ProfilerStep#" + std::string(40000, '7')));
  EXPECT_FALSE(dflt.match("ProfilerStep#12a"));
  StepMatcher custom(R"(Step \d+)");
  EXPECT_FALSE(custom.scanner());
  EXPECT_TRUE(custom.match("Step 12"));
  EXPECT_TRUE(custom.match("Step " + std::string(40000, '7')));
  EXPECT_FALSE(custom.match("step 12"));  // step patterns are case-sensitive
}

// The built-in table's one exclusion (FBGEMM's namespace says "gemm"): an `unless` pattern, since RE2
// has no lookahead; a user rule with a lookahead is refused with the file and line.
TEST(TraceAnalyze, UnlessExcludesWhatALookaheadWould) {
  auto t = CategoryTable::builtin();
  auto cat = [&](const std::string& n) { return t.category(t.classify(n, GpuOpKind::kernel).category).name; };
  EXPECT_EQ(cat("void fbgemm_gpu::reorder_batched_ad_indices_kernel<float>"), "embedding");
  EXPECT_EQ(cat("void fbgemm_gpu::f8f8bf16_rowwise_gemm<...>"), "gemm");
  try {
    t.prepend_user_rules("rules:\n  - {category: gemm, pattern: 'x(?!y)'}\n", "user.yaml");
    FAIL() << "a lookahead was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("user.yaml:2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("invalid regex"), std::string::npos) << e.what();
  }
}

// Dims whose product leaves int64 (3037000500^2 > 2^63) make no GEMM shape instead of undefined
// behaviour; the kernel is still a GEMM, just without a shape.
TEST(TraceAnalyze, AnOverflowingShapeIsNotAShape) {
  TempDir d;
  write_text(d.file("t.json"), R"json({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 10,
     "args": {"Input Dims": [[3037000500, 3037000500, 4], [4, 2]], "Input type": ["float", "float"]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 2, "dur": 2, "args": {"correlation": 5}},
    {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn", "ts": 20, "dur": 30, "args": {"stream": 7, "correlation": 5}}
  ]})json");
  auto files = read_trace(d.file("t.json"));
  auto tl = build_timeline(files[0], CategoryTable::builtin(), AnalyzeOptions{});
  ASSERT_EQ(tl.ops.size(), 1u);
  EXPECT_EQ(tl.ops[0].gemm_op, 0);
  EXPECT_EQ(tl.ops[0].shape, -1);
}

// Only zero-duration GPU events: nothing is busy, nothing crashes (the busy union is empty).
TEST(TraceAnalyze, ZeroDurationEventsOnly) {
  TempDir d;
  write_text(d.file("z.json"), R"json({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 10, "dur": 0, "args": {"stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 30, "dur": 0, "args": {"stream": 7}}]})json");
  auto files = read_trace(d.file("z.json"));
  auto rep = analyze(files, CategoryTable::builtin(), AnalyzeOptions{}, "all", "z");
  const auto& all = phase_of(rep.ranks[0], "all");
  EXPECT_DOUBLE_EQ(all.wall_us, 20.0);
  EXPECT_DOUBLE_EQ(all.busy_us, 0.0);
  EXPECT_EQ(all.events, 2);
}

// A step window without GPU events is said to be so, never "no window of this phase".
TEST(TraceAnalyze, AWindowWithoutGpuEventsIsNamedAsSuch) {
  TempDir d;
  // ProfilerStep#1 launches one kernel (no GEMM shape: phase unknown), ProfilerStep#2 launches none.
  write_text(d.file("t.json"), R"json({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 2, "args": {"correlation": 5}},
    {"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4>", "ts": 20, "dur": 30, "args": {"stream": 7, "correlation": 5}},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 200, "dur": 100}
  ]})json");
  auto files = read_trace(d.file("t.json"));
  auto table = CategoryTable::builtin();
  auto all = analyze(files, table, AnalyzeOptions{}, "all", "t");
  ASSERT_EQ(all.ranks[0].windows.size(), 2u);
  EXPECT_EQ(all.ranks[0].empty_windows, 1);
  const auto& unknown = phase_of(all.ranks[0], "unknown");
  EXPECT_EQ(unknown.windows, 1);
  EXPECT_EQ(unknown.empty_windows, 1);
  EXPECT_NE(to_table(all).find("-- unknown (1 window and 1 without GPU events)"), std::string::npos) << to_table(all);
  auto dec = analyze(files, table, AnalyzeOptions{}, "decode", "t");
  EXPECT_NE(to_table(dec).find("-- decode: no window of this phase (1 window of the trace holds no GPU event, so its phase is unknown)"),
            std::string::npos) << to_table(dec);
  // Only the empty step in the phase: "none holding a GPU event".
  write_text(d.file("u.json"), R"json({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4>", "ts": 0, "dur": 30, "args": {"stream": 7}},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 200, "dur": 100}
  ]})json");
  auto u = analyze(read_trace(d.file("u.json")), table, AnalyzeOptions{}, "all", "u");
  EXPECT_NE(to_table(u).find("-- unknown: 1 window of this phase, none holding a GPU event"), std::string::npos) << to_table(u);
  EXPECT_EQ(to_json(u)["ranks"][0]["windows_without_gpu_events"], 1);
}

TEST(TraceAnalyze, UserRulesGoFirst) {
  TempDir d;
  write_text(d.file("rules.yaml"), R"(
categories:
  my_moe: {class: compute, label: "my MoE"}
rules:
  - {category: my_moe, family: mine, pattern: 'fused_moe'}
)");
  auto t = CategoryTable::builtin();
  t.prepend_user_rules_file(d.file("rules.yaml"));
  auto c = t.classify("fused_moe_kernel", GpuOpKind::kernel);
  EXPECT_EQ(t.category(c.category).name, "my_moe");
  EXPECT_EQ(c.family, "mine");
  EXPECT_EQ(t.category(t.classify("nvjet_tst", GpuOpKind::kernel).category).name, "gemm");
}

TEST(TraceAnalyze, BadRulesFileNamesFileLineAndKey) {
  TempDir d;
  write_text(d.file("bad.yaml"), "rules:\n  - {category: gemm, pattren: 'x'}\n");
  auto t = CategoryTable::builtin();
  try {
    t.prepend_user_rules_file(d.file("bad.yaml"));
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(d.file("bad.yaml") + ":2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("unknown key \"pattren\""), std::string::npos) << msg;
  }
  write_text(d.file("bad2.yaml"), "rules:\n  - {category: nosuch, pattern: 'x'}\n");
  EXPECT_THROW(t.prepend_user_rules_file(d.file("bad2.yaml")), std::runtime_error);
  write_text(d.file("bad3.yaml"), "rules:\n  - {category: gemm, pattern: '(unclosed'}\n");
  EXPECT_THROW(t.prepend_user_rules_file(d.file("bad3.yaml")), std::runtime_error);
}

void expect_matches_truth(const AnalysisReport& rep, const testgen::GenTruth& truth, const testgen::GenSpec& spec) {
  ASSERT_EQ(rep.ranks.size(), static_cast<size_t>(spec.ranks));
  for (int r = 0; r < spec.ranks; ++r) {
    const auto& rr = rep.ranks[static_cast<size_t>(r)];
    EXPECT_EQ(rr.rank, r);
    EXPECT_EQ(rr.launched, rr.gpu_events);  // every GPU event joined to its launch
    for (const char* ph : {"prefill", "decode"}) {
      SCOPED_TRACE(fmt::format("rank {} {}", r, ph));
      const auto& want = truth.ranks[static_cast<size_t>(r)].at(ph);
      const auto& got = phase_of(rr, ph);
      EXPECT_EQ(got.windows, want.windows);
      EXPECT_EQ(got.events, want.kernels);
      EXPECT_DOUBLE_EQ(got.wall_us, want.wall_us);
      EXPECT_DOUBLE_EQ(got.busy_us, want.busy_us);
      EXPECT_DOUBLE_EQ(got.idle_us, want.idle_us);
      EXPECT_EQ(got.idle_gaps, want.idle_gaps);
      EXPECT_DOUBLE_EQ(got.comm_us, want.comm_us);
      EXPECT_DOUBLE_EQ(got.comm_busy_us, want.comm_us);
      EXPECT_DOUBLE_EQ(got.comm_overlap_us, want.overlap_us);
      ASSERT_EQ(got.by_category.size(), want.by_category.size());
      for (const auto& [cat, cv] : want.by_category) {
        EXPECT_EQ(got.by_category.at(cat).count, cv.first) << cat;
        EXPECT_DOUBLE_EQ(got.by_category.at(cat).total_us, cv.second) << cat;
      }
      EXPECT_EQ(got.streams, (spec.two_streams ? std::vector<int64_t>{7, 8} : std::vector<int64_t>{7}));
    }
  }
  // Shapes: every (phase, op, M, N, K, batch, dtype) and its call count over all ranks.
  size_t want_rows = 0;
  for (const auto& [ph, shapes] : truth.shapes) {
    for (const auto& s : shapes) {
      ++want_rows;
      auto it = std::find_if(rep.gemm_shapes.begin(), rep.gemm_shapes.end(), [&](const ShapeRow& row) {
        return row.phase == ph && row.op == s.op && row.m == s.m && row.n == s.n && row.k == s.k && row.batch == s.batch;
      });
      ASSERT_NE(it, rep.gemm_shapes.end()) << ph << " " << s.op << " " << s.m << "x" << s.n << "x" << s.k;
      EXPECT_EQ(it->dtype, s.dtype);
      EXPECT_EQ(it->calls, s.calls_per_rank * spec.ranks);
      EXPECT_EQ(it->kernels, s.calls_per_rank * spec.ranks);
    }
  }
  EXPECT_EQ(rep.gemm_shapes.size(), want_rows);
  EXPECT_EQ(rep.empty_input_dims_by_op, truth.empty_input_dims);
  EXPECT_EQ(rep.ops_with_input_dims, truth.ops_with_input_dims);
  int64_t empty = 0;
  for (const auto& [k, v] : truth.empty_input_dims) empty += v;
  EXPECT_EQ(rep.ops_with_empty_input_dims, empty);
  EXPECT_EQ(rep.skipped, truth.skipped);
}

TEST(TraceAnalyze, EightRankTraceKnownAnswers) {
  TempDir d;
  testgen::GenSpec spec;  // 8 ranks, 1 prefill + 2 decode steps, two streams
  auto truth = testgen::write_trace_dir(spec, d.str());
  auto files = read_trace(d.str());
  auto rep = analyze(files, CategoryTable::builtin(), AnalyzeOptions{}, "all", d.str());
  expect_matches_truth(rep, truth, spec);
  // Overlap fraction: 8 us of each layer's second all-reduce (10 us) overlaps compute.
  const auto& dec = phase_of(rep.ranks[0], "decode");
  EXPECT_DOUBLE_EQ(dec.overlap_fraction(), 8.0 * 4 * 2 / ((12.0 + 10.0) * 4 * 2));
  // Balance: all-reduce #1 lasts 12 + 0.5 * rank us, 4 layers x 2 decode steps.
  auto bal = std::find_if(rep.comm_balance.begin(), rep.comm_balance.end(), [](const BalanceRow& b) { return b.phase == "decode"; });
  ASSERT_NE(bal, rep.comm_balance.end());
  EXPECT_DOUBLE_EQ(bal->min_us, 8 * (12.0 + 10.0));
  EXPECT_EQ(bal->min_rank, 0);
  EXPECT_DOUBLE_EQ(bal->max_us, 8 * (12.0 + 3.5 + 10.0));
  EXPECT_EQ(bal->max_rank, 7);
  EXPECT_DOUBLE_EQ(bal->median_us, 8 * (12.0 + 1.75 + 10.0));
  // Step windows come from the ProfilerStep annotations, with phases from the GEMM M.
  ASSERT_EQ(rep.ranks[0].windows.size(), 3u);
  EXPECT_EQ(rep.ranks[0].windows[0].phase, Phase::prefill);
  EXPECT_EQ(rep.ranks[0].windows[0].median_m, 2048);
  EXPECT_EQ(rep.ranks[0].windows[1].phase, Phase::decode);
  // JSON output carries the same figures.
  auto j = to_json(rep);
  EXPECT_EQ(j["ranks"].size(), 8u);
  EXPECT_FALSE(to_table(rep).empty());
}

TEST(TraceAnalyze, OneStreamPerRankHasZeroOverlapGzip) {
  TempDir d;
  testgen::GenSpec spec{.ranks = 4, .two_streams = false, .amd = true, .gzip = true};
  auto truth = testgen::write_trace_dir(spec, d.str());
  auto files = read_trace(d.str());
  ASSERT_TRUE(files[0].gzip);
  EXPECT_EQ(files[0].device_name, "AMD Instinct MI355X");
  auto rep = analyze(files, CategoryTable::builtin(), AnalyzeOptions{}, "all", d.str());
  expect_matches_truth(rep, truth, spec);
  for (const auto& rr : rep.ranks) {
    for (const auto& p : rr.phases) {
      EXPECT_EQ(p.comm_overlap_us, 0.0);
      EXPECT_EQ(p.overlap_fraction(), 0.0);
    }
    const auto& dec = phase_of(rr, "decode");
    EXPECT_EQ(dec.by_family.at("gemm/hipblaslt").count, 2 * (4 * 2 + 1));  // qkv + o_proj per layer, LM head
    EXPECT_EQ(dec.by_family.at("communication/rccl").count, 4 * 2);
    EXPECT_EQ(dec.by_family.at("communication/custom_ar").count, 4 * 2);
    EXPECT_EQ(dec.by_family.at("moe_gemm/ck").count, 4 * 2);
  }
}

TEST(TraceAnalyze, PhasesFromGemmShapesWithoutStepAnnotations) {
  TempDir d;
  testgen::GenSpec spec{.ranks = 2, .step_annotations = false};
  auto truth = testgen::write_trace_dir(spec, d.str());
  auto files = read_trace(d.str());
  auto rep = analyze(files, CategoryTable::builtin(), AnalyzeOptions{}, "all", d.str());
  for (int r = 0; r < 2; ++r) {
    const auto& rr = rep.ranks[static_cast<size_t>(r)];
    EXPECT_EQ(rr.window_rule, "GEMM M runs");
    ASSERT_EQ(rr.windows.size(), 2u);  // one prefill run, one decode run (both decode steps)
    for (const char* ph : {"prefill", "decode"}) {
      const auto& want = truth.ranks[static_cast<size_t>(r)].at(ph);
      const auto& got = phase_of(rr, ph);
      EXPECT_EQ(got.events, want.kernels) << ph;
      for (const auto& [cat, cv] : want.by_category) EXPECT_DOUBLE_EQ(got.by_category.at(cat).total_us, cv.second) << ph << " " << cat;
      EXPECT_DOUBLE_EQ(got.busy_us, want.busy_us) << ph;
    }
    // The decode run spans both decode steps and the idle gap between them.
    const auto& dec = phase_of(rr, "decode");
    const auto& want = truth.ranks[static_cast<size_t>(r)].at("decode");
    EXPECT_DOUBLE_EQ(dec.wall_us, want.wall_us + spec.step_gap_us);
  }
}

TEST(TraceAnalyze, WindowSelection) {
  TempDir d;
  testgen::GenSpec spec;
  spec.ranks = 1;
  testgen::write_trace_dir(spec, d.str());
  auto files = read_trace(d.str());
  auto rep = analyze(files, CategoryTable::builtin(), AnalyzeOptions{}, "decode", d.str());
  ASSERT_EQ(rep.ranks[0].phases.size(), 1u);
  EXPECT_EQ(rep.ranks[0].phases[0].phase, "decode");
  for (const auto& s : rep.gemm_shapes) EXPECT_EQ(s.phase, "decode");
  EXPECT_THROW(analyze(files, CategoryTable::builtin(), AnalyzeOptions{}, "middle", d.str()), std::invalid_argument);
}

}  // namespace
}  // namespace fusesim::trace
