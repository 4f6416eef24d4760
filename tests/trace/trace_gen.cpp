// Synthetic Kineto traces with known answers (see trace_gen.hpp).
#include "trace_gen.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>
#include <zlib.h>

namespace fusesim::trace::testgen {

namespace {

/// Buffered output to a plain or gzip file.
class Out {
 public:
  Out(const std::string& path, bool gzip) : path_(path), gzip_(gzip) {
    if (gzip) {
      gz_ = gzopen(path.c_str(), "wb6");
      if (!gz_) throw std::runtime_error("cannot write " + path);
      gzbuffer(gz_, 1 << 20);
    } else {
      f_ = std::fopen(path.c_str(), "wb");
      if (!f_) throw std::runtime_error("cannot write " + path);
    }
  }
  ~Out() { close(); }
  fmt::memory_buffer& buf() { return buf_; }
  void maybe_flush() { if (buf_.size() > (1 << 20)) flush(); }
  void flush() {
    if (buf_.size() == 0) return;
    bytes_ += buf_.size();
    if (gzip_) {
      if (gzwrite(gz_, buf_.data(), static_cast<unsigned>(buf_.size())) <= 0) throw std::runtime_error("gzwrite failed: " + path_);
    } else if (std::fwrite(buf_.data(), 1, buf_.size(), f_) != buf_.size()) {
      throw std::runtime_error("write failed: " + path_);
    }
    buf_.clear();
  }
  void close() {
    flush();
    if (gz_) { gzclose(gz_); gz_ = nullptr; }
    if (f_) { std::fclose(f_); f_ = nullptr; }
  }
  uint64_t bytes() const { return bytes_; }

 private:
  std::string path_;
  bool gzip_;
  gzFile gz_ = nullptr;
  FILE* f_ = nullptr;
  fmt::memory_buffer buf_;
  uint64_t bytes_ = 0;
};

struct OpDesc {
  std::string name;
  std::string dims;   // JSON array text for "Input Dims"
  std::string types;  // JSON array text for "Input type"
};

struct KernelDef {
  std::string name;
  std::string category;
  double dur_us;
  bool memcpy = false;
  std::vector<OpDesc> chain;  // outermost first; the launch sits in the innermost
};

constexpr double kBase = 1700000000000.0;  // us; multiples of 1/8 stay exact in double

class RankWriter {
 public:
  RankWriter(const GenSpec& spec, int rank, Out& out, GenTruth& truth)
      : s_(spec), rank_(rank), out_(out), truth_(truth) {
    cpu_pid_ = 1000 + rank;
    cpu_tid_ = 1000 + rank;
  }

  void write() {
    auto& b = out_.buf();
    fmt::format_to(std::back_inserter(b),
                   "{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {{\"id\": {0}, \"name\": \"{1}\", "
                   "\"totalGlobalMem\": 150754820096, \"computeMajor\": 9, \"computeMinor\": 0, \"numSms\": 132}}\n  ],\n"
                   "  \"distributedInfo\": {{\"backend\": \"{2}\", \"rank\": {0}, \"world_size\": {3}, \"pg_count\": 1}},\n"
                   "  \"record_shapes\": 1,\n  \"traceEvents\": [\n",
                   rank_, s_.amd ? "AMD Instinct MI355X" : "NVIDIA H200", s_.amd ? "rccl" : "nccl", s_.ranks);
    if (s_.extra_events) {
      meta("process_name", cpu_pid_, 0, "python");
      meta("process_name", rank_, 0, fmt::format("GPU {}", rank_));
      meta("thread_name", cpu_pid_, cpu_tid_, "thread 1 (python)");
      meta("thread_name", rank_, 7, "stream 7");
      meta("thread_name", rank_, 8, "stream 8");
    }
    double t = kBase + 100;
    int step_no = 0;
    for (int p = 0; p < s_.prefill_steps + s_.decode_steps; ++p) {
      bool prefill = p < s_.prefill_steps;
      double end = step(t, prefill, step_no++);
      t = end + s_.step_gap_us;
    }
    fmt::format_to(std::back_inserter(out_.buf()),
                   "\n  ],\n  \"traceName\": \"rank{}.json\",\n  \"displayTimeUnit\": \"ms\",\n"
                   "  \"baseTimeNanoseconds\": 1700000000000000000\n}}\n",
                   rank_);
  }

 private:
  void sep() {
    auto& b = out_.buf();
    if (!first_) b.append(std::string_view(",\n"));
    first_ = false;
    out_.maybe_flush();
  }
  void meta(const char* what, int pid, int tid, const std::string& name) {
    sep();
    fmt::format_to(std::back_inserter(out_.buf()),
                   "  {{\"name\": \"{}\", \"ph\": \"M\", \"ts\": {:.3f}, \"pid\": {}, \"tid\": {}, \"args\": {{\"name\": \"{}\"}}}}",
                   what, kBase, pid, tid, name);
    skipped("M/");
  }
  void skipped(const std::string& k) { truth_.skipped[k]++; }
  long next_ext_id() { return ++ext_id_; }

  void cpu_op(const OpDesc& op, double ts, double dur, const char* cat = "cpu_op") {
    const long id = next_ext_id();
    sep();
    fmt::format_to(std::back_inserter(out_.buf()),
                   "  {{\n    \"ph\": \"X\", \"cat\": \"{}\", \"name\": \"{}\", \"pid\": {}, \"tid\": {},\n"
                   "    \"ts\": {:.3f}, \"dur\": {:.3f},\n    \"args\": {{\n      \"External id\": {}, \"Record function id\": 0, "
                   "\"Ev Idx\": {}, \"Sequence number\": {},\n      \"Input Dims\": {}, \"Input type\": {},\n"
                   "      \"Input Strides\": [], \"Concrete Inputs\": []\n    }}\n  }}",
                   cat, op.name, cpu_pid_, cpu_tid_, ts, dur, id, id, id, op.dims, op.types);
    truth_.ops_with_input_dims++;
  }

  void annotation(const std::string& name, double ts, double dur) {
    const long id = next_ext_id();
    sep();
    fmt::format_to(std::back_inserter(out_.buf()),
                   "  {{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"{}\", \"pid\": {}, \"tid\": {}, \"ts\": {:.3f}, "
                   "\"dur\": {:.3f}, \"args\": {{\"External id\": {}, \"Record function id\": 0, \"Ev Idx\": {}}}}}",
                   name, cpu_pid_, cpu_tid_, ts, dur, id, id);
  }

  /// Emit the CPU chain, the runtime launch, the GPU event and the flow pair; returns the GPU end.
  double launch(const KernelDef& k, double gpu_start, int stream, double scale, const std::string& phase) {
    double dur = k.dur_us * scale;
    double c = cpu_t_;
    cpu_t_ += 1.0;
    for (size_t i = 0; i < k.chain.size(); ++i)
      cpu_op(k.chain[i], c + 0.125 * static_cast<double>(i), 0.875 - 0.0625 * 3 * static_cast<double>(i));
    long corr = ++corr_;
    const char* launch_name = k.memcpy ? (s_.amd ? "hipMemcpyAsync" : "cudaMemcpyAsync")
                                       : (s_.amd ? "hipExtModuleLaunchKernel" : "cudaLaunchKernel");
    sep();
    fmt::format_to(std::back_inserter(out_.buf()),
                   "  {{\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"{}\", \"pid\": {}, \"tid\": {},\n"
                   "    \"ts\": {:.3f}, \"dur\": {:.3f},\n    \"args\": {{\n      \"External id\": {}, \"cbid\": 211, \"correlation\": {}\n    }}\n  }}",
                   launch_name, cpu_pid_, cpu_tid_, c + 0.5, 0.125, ext_id_, corr);
    sep();
    std::string corr_arg = s_.correlation_in_args ? fmt::format("\"correlation\": {}, ", corr) : std::string();
    if (k.memcpy) {
      fmt::format_to(std::back_inserter(out_.buf()),
                     "  {{\n    \"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"{}\", \"pid\": {}, \"tid\": {},\n"
                     "    \"ts\": {:.3f}, \"dur\": {:.3f},\n    \"args\": {{\n      \"External id\": {}, \"device\": {}, \"context\": 1,\n"
                     "      \"stream\": {}, {}\"bytes\": 917504, \"memory bandwidth (GB/s)\": 611.6\n    }}\n  }}",
                     k.name, rank_, stream, gpu_start, dur, ext_id_, rank_, stream, corr_arg);
    } else {
      fmt::format_to(std::back_inserter(out_.buf()),
                     "  {{\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{}\", \"pid\": {}, \"tid\": {},\n"
                     "    \"ts\": {:.3f}, \"dur\": {:.3f},\n    \"args\": {{\n      \"External id\": {}, \"queued\": 0, \"device\": {}, \"context\": 1,\n"
                     "      \"stream\": {}, {}\"registers per thread\": 128, \"shared memory\": 49152, \"blocks per SM\": 1.0,\n"
                     "      \"warps per SM\": 4.0, \"grid\": [132, 1, 1], \"block\": [384, 1, 1], \"est. achieved occupancy %\": 6\n    }}\n  }}",
                     k.name, rank_, stream, gpu_start, dur, ext_id_, rank_, stream, corr_arg);
    }
    sep();
    fmt::format_to(std::back_inserter(out_.buf()),
                   "  {{\"ph\": \"s\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {:.3f}, \"cat\": \"ac2g\", \"name\": \"ac2g\"}},\n"
                   "  {{\"ph\": \"f\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {:.3f}, \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}}",
                   corr, cpu_pid_, cpu_tid_, c + 0.5, corr, rank_, stream, gpu_start);
    for (int i = 0; i < s_.python_events_per_kernel; ++i) {
      sep();
      fmt::format_to(std::back_inserter(out_.buf()),
                     "  {{\n    \"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"sglang/srt/layers/linear.py(315): forward\", "
                     "\"pid\": {}, \"tid\": {},\n    \"ts\": {:.3f}, \"dur\": {:.3f},\n    \"args\": {{\n      \"Python parent id\": {}, "
                     "\"Python id\": {}, \"Ev Idx\": {}\n    }}\n  }}",
                     cpu_pid_, cpu_tid_, c, 0.9375, ext_id_ - 1, ext_id_, ext_id_);
      skipped("X/python_function");
    }
    auto& pt = truth_.ranks[static_cast<size_t>(rank_)][phase];
    auto& cat = pt.by_category[k.category];
    cat.first++;
    cat.second += dur;
    pt.kernels++;
    if (k.category == "communication") pt.comm_us += dur;
    return gpu_start + dur;
  }

  void empty_op(const std::string& name, const std::string& dims, const std::string& types) {
    cpu_op({name, dims, types}, cpu_t_, 0.5);
    cpu_t_ += 1.0;
    truth_.empty_input_dims[name]++;
  }

  std::string mk(int64_t a, int64_t b) { return fmt::format("[{}, {}]", a, b); }

  double step(double t0, bool prefill, int step_no) {
    const std::string phase = prefill ? "prefill" : "decode";
    const int64_t M = prefill ? s_.prefill_tokens : s_.decode_batch;
    const double sc = prefill ? s_.prefill_scale : 1.0;
    const bool amd = s_.amd;
    const std::string bf = "\"c10::BFloat16\"";
    cpu_t_ = t0 - 10;
    double cpu_begin = cpu_t_ - 1;

    const std::string x = fmt::format("[{}, 7168]", M);
    KernelDef norm{amd ? "void aiter::rmsnorm2d_fwd<ck_tile::bf16_t>" : "void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, float, int, int)",
                   "norm_quant", 3, false, {{"_C::rms_norm", fmt::format("[{0}, {0}, [7168], []]", x), fmt::format("[{0}, {0}, {0}, \"Scalar\"]", bf)}}};
    KernelDef qkv{amd ? "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT16x64x256_MI16x16x1_SN_LDSB1_AFC1_AFEM1"
                      : "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
                  "gemm", 20 + (s_.collective_wait ? rank_ * s_.gemm_skew_us : 0.0), false,
                  {{"aten::linear", fmt::format("[{}, [2112, 7168], [2112]]", x), fmt::format("[{0}, {0}, {0}]", bf)},
                   {"aten::addmm", fmt::format("[[2112], {}, [7168, 2112], [], []]", x), fmt::format("[{0}, {0}, {0}, \"Scalar\", \"Scalar\"]", bf)}}};
    KernelDef attn{amd ? "mla_a8w8_qh16_qseqlen1_gqaratio16_ps" : "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>, false>",
                   "attention", 15, false, {{"vllm::unified_attention", fmt::format("[[{}, 16, 576], [4096, 64, 1, 576], []]", M), fmt::format("[{0}, {0}, \"\"]", bf)}}};
    KernelDef bmm{amd ? "_ZN5aiter28batched_gemm_a16wfp4_kernel" : "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>",
                  "gemm", 4, false, {{"aten::bmm", fmt::format("[[16, {}, 512], [16, 512, 128]]", M), fmt::format("[{0}, {0}]", bf)}}};
    KernelDef oproj{amd ? "Cijk_Alik_Bljk_BBS_BH_MT32x64x128_MI16x16x1_SN" : "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>",
                    "gemm", 10, false, {{"aten::mm", fmt::format("[[{}, 1024], [1024, 7168]]", M), fmt::format("[{0}, {0}]", bf)}}};
    KernelDef ar1{amd ? "rcclGenericKernel<1, false>(ncclDevComm*, unsigned long, ncclWork*)" : "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                  "communication",
                  s_.collective_wait ? 12 + (s_.ranks - 1 - rank_) * s_.gemm_skew_us : 12 + rank_ * s_.rank_comm_skew_us, false, {{"nccl:all_reduce", fmt::format("[{}]", x), fmt::format("[{}]", bf)}}};
    KernelDef router{amd ? "_gemm_a16_w16_kernel" : "matmul_kernel_persistent", "gemm", 4, false,
                     {{"aten::linear", fmt::format("[{}, [256, 7168]]", x), fmt::format("[{0}, {0}]", bf)}}};
    KernelDef topk{amd ? "void aiter::biased_grouped_topk_kernel<__hip_bfloat16>" : "void moe_fused_gate_kernel<float, 256, 8>(void*, void*, float*, int*, long, long, long, long, double)",
                   "moe_routing", 2, false, {{"sgl_kernel::moe_fused_gate", fmt::format("[[{}, 256], [256]]", M), fmt::format("[{0}, {0}]", bf)}}};
    KernelDef align{amd ? "ck_tile::MoeSortingKernel<ck_tile::MoeSortingProblem<int, float, 1, 4, true>>" : "void moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int, int, int, int, unsigned long, int*)",
                    "moe_routing", 2, false, {{"sgl_kernel::moe_align_block_size", fmt::format("[[{}, 8], [], []]", M), "[\"int\", \"Scalar\", \"Scalar\"]"}}};
    KernelDef moe{amd ? "ck_tile::kentry<ck_tile::MoeFlatmmKernel<ck_tile::MoeFlatmmPipeline>>" : "fused_moe_kernel", "moe_gemm", 40, false,
                  {{"sglang::fused_moe", fmt::format("[{}, [256, 4096, 7168], [256, 7168, 2048], [{}, 8], [{}, 8]]", x, M, M), fmt::format("[{0}, {0}, {0}, \"float\", \"int\"]", bf)}}};
    KernelDef shexp{amd ? "_ZN5aiter25gemm_a8w8_blockscale_kernel" : "sm90_xmma_gemm_e4m3bf16_e4m3f32_f32_tn_n_tilesize64x128x128_cublas", "gemm", 6, false,
                    {{"aten::_scaled_mm", fmt::format("[{}, [7168, 4608], [], [], [], []]", x),
                      "[\"c10::Float8_e4m3fn\", \"c10::Float8_e4m3fn\", \"float\", \"float\", \"\", \"\"]"}}};
    KernelDef ar2{amd ? "void aiter::cross_device_reduce_2stage<__hip_bfloat16, 8>(aiter::RankData*, aiter::RankSignals, aiter::Signal*, __hip_bfloat16*, int)"
                      : "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)",
                  "communication", 10, false, {{"vllm::all_reduce", fmt::format("[{}]", x), fmt::format("[{}]", bf)}}};
    KernelDef copy{"Memcpy DtoD (Device -> Device)", "copy", 1.5, true,
                   {{"aten::copy_", fmt::format("[{0}, {0}, []]", x), fmt::format("[{0}, {0}, \"Scalar\"]", bf)}}};
    KernelDef add{"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctorOnSelf_add<c10::BFloat16>, std::array<char*, 2ul> >(int, at::native::CUDAFunctorOnSelf_add<c10::BFloat16>, std::array<char*, 2ul>)",
                  "elementwise", 2, false, {{"aten::add_", fmt::format("[{0}, {0}, []]", x), fmt::format("[{0}, {0}, \"Scalar\"]", bf)}}};
    const int64_t R = prefill ? s_.prefill_requests : s_.decode_batch;
    KernelDef lm_head{amd ? "Cijk_Alik_Bljk_BBS_BH_MT256x128x64_SN" : "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize256x128x64_cublas", "gemm", 8, false,
                      {{"aten::mm", fmt::format("[[{}, 7168], [7168, 32000]]", R), fmt::format("[{0}, {0}]", bf)}}};

    const int A = 7, B = 8;
    double t = t0;
    double gap_total = 0;
    for (int l = 0; l < s_.layers; ++l) {
      empty_op("aten::empty", "[[], [], [], [], [], []]", "[\"Scalar\", \"Scalar\", \"Scalar\", \"\", \"\", \"\"]");
      empty_op("aten::empty", "[[], [], [], [], [], []]", "[\"Scalar\", \"Scalar\", \"Scalar\", \"\", \"\", \"\"]");
      empty_op("aten::zeros", "[[], [], [], [], []]", "[\"Scalar\", \"Scalar\", \"\", \"\", \"\"]");
      t = launch(norm, t, A, sc, phase);
      t = launch(qkv, t, A, sc, phase);
      t = launch(attn, t, A, sc, phase);
      t = launch(bmm, t, A, sc, phase);
      t = launch(oproj, t, A, sc, phase);
      t = launch(ar1, t, A, sc, phase);
      t = launch(norm, t, A, sc, phase);
      double gap_from = t;
      t += s_.layer_gap_us * sc;
      gap_total += s_.layer_gap_us * sc;
      if (s_.gap_is_host_late && s_.layer_gap_us > 0) {
        // The host stalls (e.g. a sync) and launches the next kernel during the gap.
        cpu_t_ = std::max(cpu_t_, t - std::min(2.0, 0.5 * (t - gap_from)));
      }
      t = launch(router, t, A, sc, phase);
      t = launch(topk, t, A, sc, phase);
      t = launch(align, t, A, sc, phase);
      t = launch(moe, t, A, sc, phase);
      if (s_.two_streams) {
        double ar_end = launch(ar2, t, B, sc, phase);
        t = launch(shexp, t, A, sc, phase);
        t = launch(add, t, A, sc, phase);
        t = launch(copy, ar_end, A, sc, phase);  // waits for the all-reduce
        truth_.ranks[static_cast<size_t>(rank_)][phase].overlap_us += 8 * sc;
      } else {
        t = launch(shexp, t, A, sc, phase);
        t = launch(ar2, t, A, sc, phase);
        t = launch(copy, t, A, sc, phase);
        t = launch(add, t, A, sc, phase);
      }
    }
    t = launch(lm_head, t, A, sc, phase);

    auto& pt = truth_.ranks[static_cast<size_t>(rank_)][phase];
    pt.windows++;
    pt.wall_us += t - t0;
    pt.idle_us += gap_total;
    pt.busy_us += t - t0 - gap_total;
    pt.idle_gaps += s_.layers;
    pt.step_wall_us.push_back(t - t0);

    if (s_.step_annotations) annotation(fmt::format("ProfilerStep#{}", step_no), cpu_begin, cpu_t_ + 1 - cpu_begin);
    if (s_.extra_events) {
      sep();
      fmt::format_to(std::back_inserter(out_.buf()),
                     "  {{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": {}, \"tid\": {}, \"ts\": {:.3f}, "
                     "\"args\": {{\"Total Reserved\": 2097152, \"Bytes\": 512}}}}",
                     cpu_pid_, cpu_tid_, cpu_begin);
      skipped("i/cpu_instant_event");
      sep();
      fmt::format_to(std::back_inserter(out_.buf()), "  {{\"ph\": \"C\", \"name\": \"memory\", \"pid\": {}, \"ts\": {:.3f}, \"args\": {{\"allocated\": 1024}}}}",
                     rank_, t0);
      skipped("C/");
      sep();
      fmt::format_to(std::back_inserter(out_.buf()),
                     "  {{\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": \"ProfilerStep#{}\", \"pid\": {}, \"tid\": 7, \"ts\": {:.3f}, \"dur\": {:.3f}, "
                     "\"args\": {{\"External id\": 1, \"nested\": {{\"deeper\": [1, [2, {{\"x\": null}}]]}}}}}}",
                     step_no, rank_, t0, t - t0);
      skipped("X/gpu_user_annotation");
      sep();
      fmt::format_to(std::back_inserter(out_.buf()),
                     "  {{\"ph\": \"X\", \"cat\": \"fusesim_unknown_kind\", \"name\": \"something new\", \"pid\": {}, \"tid\": {}, \"ts\": {:.3f}, \"dur\": 1.0}}",
                     cpu_pid_, cpu_tid_, cpu_begin);
      skipped("X/fusesim_unknown_kind");
    }
    return t;
  }

  const GenSpec& s_;
  int rank_;
  Out& out_;
  GenTruth& truth_;
  int cpu_pid_, cpu_tid_;
  double cpu_t_ = 0;
  long corr_ = 0, ext_id_ = 0;
  bool first_ = true;
};

void add_shape_truth(const GenSpec& s, GenTruth& truth) {
  auto add = [&](const std::string& phase, int steps, int64_t M, int64_t R) {
    if (steps == 0) return;
    const int64_t per = static_cast<int64_t>(s.layers) * steps;
    auto& v = truth.shapes[phase];
    v.push_back({"aten::addmm", M, 2112, 7168, 1, "BFloat16", per});
    v.push_back({"aten::bmm", M, 128, 512, 16, "BFloat16", per});
    v.push_back({"aten::mm", M, 7168, 1024, 1, "BFloat16", per});
    v.push_back({"aten::linear", M, 256, 7168, 1, "BFloat16", per});
    v.push_back({"aten::_scaled_mm", M, 4608, 7168, 1, "Float8_e4m3fn", per});
    v.push_back({"aten::mm", R, 32000, 7168, 1, "BFloat16", steps});
  };
  add("prefill", s.prefill_steps, s.prefill_tokens, s.prefill_requests);
  add("decode", s.decode_steps, s.decode_batch, s.decode_batch);
}

}  // namespace

GenTruth write_trace_file(const GenSpec& spec, int rank, const std::string& path) {
  GenTruth truth;
  truth.ranks.resize(static_cast<size_t>(spec.ranks));
  Out out(path, spec.gzip);
  RankWriter(spec, rank, out, truth).write();
  out.close();
  truth.files.push_back(path);
  truth.bytes = out.bytes();
  add_shape_truth(spec, truth);
  return truth;
}

GenTruth write_trace_dir(const GenSpec& spec, const std::string& dir) {
  std::filesystem::create_directories(dir);
  GenTruth truth;
  truth.ranks.resize(static_cast<size_t>(spec.ranks));
  for (int r = 0; r < spec.ranks; ++r) {
    std::string path = fmt::format("{}/rank{}.json{}", dir, r, spec.gzip ? ".gz" : "");
    Out out(path, spec.gzip);
    RankWriter(spec, r, out, truth).write();
    out.close();
    truth.files.push_back(path);
    truth.bytes += out.bytes();
  }
  add_shape_truth(spec, truth);
  return truth;
}

}  // namespace fusesim::trace::testgen
