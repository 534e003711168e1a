// cuDNN BiLSTM / BiGRU inference backend (include/ets/cuda/cudnn_backend.hpp): cudnnRNNForward + a cuBLAS head.
// cuDNN's GRU (CUDNN_GRU, double bias) applies r to (R_h h + b_Rh), PyTorch nn.GRU's formula, with the same gate order.
// Host code only; every CUDA / cuDNN / cuBLAS status becomes an ets::Error naming the call and file:line.
#include "ets/cuda/cudnn_backend.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ets/bilstm_predictor.hpp"
#include "ets/cuda/cudnn_weight_slice.hpp"
#include "ets/cuda/device.hpp"
#include "cublas_loader.hpp"
#include "status.hpp"

// cuBLAS is called through detail::cublas_api() (loaded on first use): the message names the cuBLAS function.
#define ETS_CUBLAS_CHECK_NAMED(status, name)                                                     \
  do {                                                                                           \
    cublasStatus_t ets_status_ = (status);                                                       \
    if (ets_status_ != CUBLAS_STATUS_SUCCESS)                                                    \
      ETS_THROW(::ets::Errc::backend, "ets.cuda.9", "{} failed: {} ({})", name,                  \
                ::ets::cuda::detail::cublas_api().status_string(ets_status_),                    \
                static_cast<int>(ets_status_));                                                  \
  } while (false)

namespace ets::cuda {
namespace {

// unique_ptr over a CUDA-library handle type (a pointer to an opaque struct) and its destroy function.
// Destroy statuses are ignored: destructors must not throw, and nothing useful can be done then.
template <class Handle, auto Destroy>
struct HandleDeleter {
  void operator()(Handle h) const noexcept {
    if (h) (void)Destroy(h);
  }
};
template <class Handle, auto Destroy>
using Unique = std::unique_ptr<std::remove_pointer_t<Handle>, HandleDeleter<Handle, Destroy>>;

using StreamPtr = Unique<cudaStream_t, cudaStreamDestroy>;
using CudnnPtr = Unique<cudnnHandle_t, cudnnDestroy>;
struct CublasDeleter {
  void operator()(cublasHandle_t h) const noexcept {
    if (h) (void)detail::cublas_api().destroy(h);  // a handle exists only where the library was loaded
  }
};
using CublasPtr = std::unique_ptr<std::remove_pointer_t<cublasHandle_t>, CublasDeleter>;
using RnnDescPtr = Unique<cudnnRNNDescriptor_t, cudnnDestroyRNNDescriptor>;
using RnnDataDescPtr = Unique<cudnnRNNDataDescriptor_t, cudnnDestroyRNNDataDescriptor>;
using TensorDescPtr = Unique<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;
using DropoutDescPtr = Unique<cudnnDropoutDescriptor_t, cudnnDestroyDropoutDescriptor>;

template <class Ptr, class Handle = typename Ptr::pointer, class Create>
Ptr create(Create&& fn) {
  Handle h = nullptr;
  fn(&h);
  return Ptr(h);
}

/// Where a GrowOnlyBuffer's bytes live: device memory, or page-locked host memory for the staging buffers of the
/// copies (pageable memory would make the driver stage every copy through its own buffer, synchronously).
struct DeviceMemory {
  static cudaError_t allocate(void** p, std::size_t bytes) { return cudaMalloc(p, bytes); }
  static void release(void* p) noexcept { (void)cudaFree(p); }
};
struct PinnedMemory {
  static cudaError_t allocate(void** p, std::size_t bytes) { return cudaMallocHost(p, bytes); }
  static void release(void* p) noexcept { (void)cudaFreeHost(p); }
};

/// Grow-only allocation; reallocates only when a larger size is asked for.
template <class Memory>
class GrowOnlyBuffer {
 public:
  GrowOnlyBuffer() = default;
  GrowOnlyBuffer(const GrowOnlyBuffer&) = delete;
  GrowOnlyBuffer& operator=(const GrowOnlyBuffer&) = delete;
  ~GrowOnlyBuffer() {
    if (ptr_) Memory::release(ptr_);
  }
  void reserve(std::size_t bytes) {
    if (bytes <= capacity_) return;
    if (ptr_) {
      Memory::release(ptr_);
      ptr_ = nullptr;
      capacity_ = 0;
    }
    ETS_CUDA_CHECK(Memory::allocate(&ptr_, bytes));
    capacity_ = bytes;
  }
  void* get() const noexcept { return ptr_; }
  template <class T>
  T* as() const noexcept { return static_cast<T*>(ptr_); }
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  void* ptr_ = nullptr;
  std::size_t capacity_ = 0;
};
using DeviceBuffer = GrowOnlyBuffer<DeviceMemory>;
using PinnedBuffer = GrowOnlyBuffer<PinnedMemory>;

/// Makes `device` current for the calling thread and restores the previous one on exit: the
/// backend must not change which device the host program's own CUDA code runs on.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    ETS_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) ETS_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceScope() { (void)cudaSetDevice(previous_); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
};

void validate(const LstmWeights& w) {
  const LstmConfig& c = w.config;
  ETS_CHECK(c.input_size > 0 && c.hidden > 0 && c.layers > 0 && c.outputs > 0 &&
                (c.cell == RnnCell::lstm || c.cell == RnnCell::gru),
            Errc::invalid_argument, "ets.cuda.5",
            "LSTM config has non-positive sizes or an unknown cell (input {}, hidden {}, layers {}, outputs {}, cell {})",
            c.input_size, c.hidden, c.layers, c.outputs, static_cast<int>(c.cell));
  const std::size_t cells = static_cast<std::size_t>(c.layers) * c.directions();
  ETS_CHECK(w.cells.size() == cells, Errc::shape, "ets.cuda.6", "LSTM weights hold {} cells, the config needs {}",
            w.cells.size(), cells);
  const std::size_t head = static_cast<std::size_t>(c.outputs) * c.hidden * c.directions();
  ETS_CHECK(w.head_w.size() == head && w.head_b.size() == static_cast<std::size_t>(c.outputs), Errc::shape,
            "ets.cuda.6", "head has {} weights and {} biases, the config needs {} and {}", w.head_w.size(),
            w.head_b.size(), head, c.outputs);
}

/// cuDNN's "this algorithm cannot do this configuration" answers: the plain bad-parameter status and the
/// not-supported family. A cue to try the next algorithm, which recomputes everything from the unchanged input. The
/// other bad-parameter statuses (null or misaligned pointers, short buffers, stream mismatches) are bugs and stay
/// errors.
bool unsupported(cudnnStatus_t s) noexcept {
  return s == CUDNN_STATUS_BAD_PARAM || CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_NOT_SUPPORTED;
}

/// Positions (windows × width) per cudnnRNNForward call: larger requests run in slices of whole windows, which
/// bounds the pinned staging buffers and the device buffers (~40 MB and ~80 MB per context at F = H = 102) whatever
/// the caller's batch and window width: 4,096 windows of the default width 12, fewer of wider ones (at least one).
/// (Slicing by windows alone let windows of width 4,096 take 6.8 GB of pinned memory and tens of GB on the device.)
constexpr int kMaxPositionsPerCall = 4096 * 12;

}  // namespace

/// One cuDNN RNN algorithm with the weights packed for it. Plans are tried in order, per shape: the persistent
/// small-hidden kernels first (one kernel per layer and direction keeps the recurrence on chip: ~0.2 ms for a
/// 4-layer H = 64 BiLSTM on an H200, where the standard algorithm's per-step launches cost ~1.2 ms whatever the
/// batch), the standard algorithm whenever cuDNN declines them (hidden size, batch, device).
struct Plan {
  cudnnRNNAlgo_t algo = CUDNN_RNN_ALGO_STANDARD;
  const char* name = "";
  DeviceBuffer weight_space;
  std::size_t weight_bytes = 0;
};

/// Everything one forward() call mutates. Borrowed exclusively from the pool for the call's duration.
struct ExecContext {
  StreamPtr stream;
  CudnnPtr cudnn;
  CublasPtr cublas;
  DropoutDescPtr dropout;
  std::vector<RnnDescPtr> rnn;  // one per plan, same order
  RnnDataDescPtr x_desc, y_desc;
  TensorDescPtr h_desc;
  int windows = -1, width = -1;  // shape the descriptors and buffers were set up for
  std::size_t plan = 0;          // the plan that shape runs on
  std::size_t work_bytes = 0;
  DeviceBuffer x, y, out, work;
  PinnedBuffer x_host, out_host;
};

struct CudnnBackend::Impl {
  LstmConfig config;
  int device = 0;
  std::vector<float> head_b;
  std::vector<std::unique_ptr<Plan>> plans;  // preference order
  DeviceBuffer head_w;
  std::string description;

  std::mutex mu;
  std::vector<std::unique_ptr<ExecContext>> idle;

  std::unique_ptr<ExecContext> make_context() const;  // handles + one RNN descriptor per plan
  cudnnStatus_t set_rnn(const ExecContext& ctx, cudnnRNNDescriptor_t rnn, cudnnRNNAlgo_t algo) const;
  RnnDescPtr make_rnn(const ExecContext& ctx, cudnnRNNAlgo_t algo) const;
  void pack(ExecContext& ctx, std::size_t plan, const LstmWeights& w);
  void select_plan(ExecContext& ctx, std::size_t first) const;
  void reshape(ExecContext& ctx, int windows, int width) const;
  void run(ExecContext& ctx, const float* x, int windows, int width, float* y) const;
};

std::unique_ptr<ExecContext> CudnnBackend::Impl::make_context() const {
  auto ctx = std::make_unique<ExecContext>();
  ctx->stream = create<StreamPtr>([](cudaStream_t* s) { ETS_CUDA_CHECK(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking)); });
  ctx->cudnn = create<CudnnPtr>([](cudnnHandle_t* h) { ETS_CUDNN_CHECK(cudnnCreate(h)); });
  ETS_CUDNN_CHECK(cudnnSetStream(ctx->cudnn.get(), ctx->stream.get()));
  const detail::CublasApi& blas = detail::cublas_api();
  ctx->cublas = create<CublasPtr>([&](cublasHandle_t* h) { ETS_CUBLAS_CHECK_NAMED(blas.create(h), "cublasCreate"); });
  ETS_CUBLAS_CHECK_NAMED(blas.set_stream(ctx->cublas.get(), ctx->stream.get()), "cublasSetStream");
  // Plain fp32 FMA math in both libraries: TF32 would break parity with the CPU path (1e-4).
  ETS_CUBLAS_CHECK_NAMED(blas.set_math_mode(ctx->cublas.get(), CUBLAS_DEFAULT_MATH), "cublasSetMathMode");

  // Inference never applies dropout; cuDNN still wants an initialised descriptor (rate 0, no RNG state).
  ctx->dropout = create<DropoutDescPtr>([](cudnnDropoutDescriptor_t* d) { ETS_CUDNN_CHECK(cudnnCreateDropoutDescriptor(d)); });
  ETS_CUDNN_CHECK(cudnnSetDropoutDescriptor(ctx->dropout.get(), ctx->cudnn.get(), 0.0f, nullptr, 0, 0));
  for (const auto& p : plans) ctx->rnn.push_back(make_rnn(*ctx, p->algo));
  ctx->x_desc = create<RnnDataDescPtr>([](cudnnRNNDataDescriptor_t* d) { ETS_CUDNN_CHECK(cudnnCreateRNNDataDescriptor(d)); });
  ctx->y_desc = create<RnnDataDescPtr>([](cudnnRNNDataDescriptor_t* d) { ETS_CUDNN_CHECK(cudnnCreateRNNDataDescriptor(d)); });
  ctx->h_desc = create<TensorDescPtr>([](cudnnTensorDescriptor_t* d) { ETS_CUDNN_CHECK(cudnnCreateTensorDescriptor(d)); });
  return ctx;
}

cudnnStatus_t CudnnBackend::Impl::set_rnn(const ExecContext& ctx, cudnnRNNDescriptor_t rnn,
                                          cudnnRNNAlgo_t algo) const {
  // Sequence-major packed input without padding (the layout PyTorch gives cuDNN; the one measured fast with the
  // persistent kernels). The weight-space layout depends only on the descriptor, so each plan's one packed buffer
  // serves every context.
  return cudnnSetRNNDescriptor_v8(rnn, algo, config.cell == RnnCell::gru ? CUDNN_GRU : CUDNN_LSTM,
                                  CUDNN_RNN_DOUBLE_BIAS,
                                  config.bidirectional ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL,
                                  CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH,
                                  config.input_size, config.hidden, config.hidden, config.layers, ctx.dropout.get(),
                                  CUDNN_RNN_PADDED_IO_DISABLED);
}

RnnDescPtr CudnnBackend::Impl::make_rnn(const ExecContext& ctx, cudnnRNNAlgo_t algo) const {
  auto rnn = create<RnnDescPtr>([](cudnnRNNDescriptor_t* d) { ETS_CUDNN_CHECK(cudnnCreateRNNDescriptor(d)); });
  ETS_CUDNN_CHECK(set_rnn(ctx, rnn.get(), algo));
  return rnn;
}

void CudnnBackend::Impl::pack(ExecContext& ctx, std::size_t plan_index, const LstmWeights& w) {
  Plan& plan = *plans[plan_index];
  cudnnRNNDescriptor_t rnn = ctx.rnn[plan_index].get();
  ETS_CUDNN_CHECK(cudnnGetRNNWeightSpaceSize(ctx.cudnn.get(), rnn, &plan.weight_bytes));
  plan.weight_space.reserve(plan.weight_bytes);
  // Zero first so any block cuDNN lays out but PyTorch lacks (none for LSTM or GRU today) is inert, not garbage.
  ETS_CUDA_CHECK(cudaMemset(plan.weight_space.get(), 0, plan.weight_bytes));

  auto m_desc = create<TensorDescPtr>([](cudnnTensorDescriptor_t* d) { ETS_CUDNN_CHECK(cudnnCreateTensorDescriptor(d)); });
  auto b_desc = create<TensorDescPtr>([](cudnnTensorDescriptor_t* d) { ETS_CUDNN_CHECK(cudnnCreateTensorDescriptor(d)); });
  const char* base = plan.weight_space.as<const char>();
  const std::size_t weight_bytes = plan.weight_bytes;

  // Copies one host block to where cuDNN says it lives, after checking cuDNN agrees on its size.
  auto place = [&](const cudnnTensorDescriptor_t desc, void* addr, const CudnnWeightSlice& s, int pseudo, int lin,
                   const char* what) {
    cudnnDataType_t type{};
    int nb = 0;
    int dims[8] = {}, strides[8] = {};
    ETS_CUDNN_CHECK(cudnnGetTensorNdDescriptor(desc, 8, &type, &nb, dims, strides));
    std::size_t elems = 1;
    for (int i = 0; i < std::min(nb, 8); ++i) elems *= static_cast<std::size_t>(std::max(dims[i], 0));
    const std::size_t bytes = s.size() * sizeof(float);
    const char* p = static_cast<const char*>(addr);
    ETS_CHECK(addr != nullptr && type == CUDNN_DATA_FLOAT && elems == s.size() && p >= base &&
                  p + bytes <= base + weight_bytes,
              Errc::backend, "ets.cuda.7",
              "cuDNN {} block (pseudo-layer {}, linLayerID {}) has {} elements at offset {}, expected {} "
              "(H {} × {}) inside a {}-byte weight space",
              what, pseudo, lin, elems, addr ? static_cast<long long>(p - base) : -1LL, s.size(), s.rows, s.cols,
              weight_bytes);
    ETS_CUDA_CHECK(cudaMemcpy(addr, cudnn_slice_data(w, s), bytes, cudaMemcpyHostToDevice));
  };

  for (int pseudo = 0; pseudo < cudnn_pseudo_layers(config); ++pseudo) {
    for (int lin = 0; lin < 2 * config.gates(); ++lin) {
      void* m_addr = nullptr;
      void* b_addr = nullptr;
      ETS_CUDNN_CHECK(cudnnGetRNNWeightParams(ctx.cudnn.get(), rnn, pseudo, weight_bytes, plan.weight_space.get(),
                                              lin, m_desc.get(), &m_addr, b_desc.get(), &b_addr));
      place(m_desc.get(), m_addr, cudnn_weight_slice(config, pseudo, lin, false), pseudo, lin, "matrix");
      place(b_desc.get(), b_addr, cudnn_weight_slice(config, pseudo, lin, true), pseudo, lin, "bias");
    }
  }
  // cudaMemset and pageable cudaMemcpy may return before the device has the bytes, and the forward streams are
  // non-blocking (no implicit order with the legacy stream): wait, so no forward reads half-written weights.
  ETS_CUDA_CHECK(cudaDeviceSynchronize());
}

/// The first plan from `first` on that accepts the shape set in ctx's descriptors, with its workspace; the last
/// (standard) plan's refusal is an error.
void CudnnBackend::Impl::select_plan(ExecContext& ctx, std::size_t first) const {
  std::size_t reserve_bytes = 0;
  for (std::size_t p = first;; ++p) {
    const cudnnStatus_t s = cudnnGetRNNTempSpaceSizes(ctx.cudnn.get(), ctx.rnn[p].get(), CUDNN_FWD_MODE_INFERENCE,
                                                      ctx.x_desc.get(), &ctx.work_bytes, &reserve_bytes);
    if (s == CUDNN_STATUS_SUCCESS) {
      ctx.plan = p;
      break;
    }
    if (p + 1 == plans.size() || !unsupported(s)) ETS_CUDNN_CHECK_NAMED(s, "cudnnGetRNNTempSpaceSizes");
  }
  ctx.work.reserve(std::max<std::size_t>(ctx.work_bytes, 1));
}

void CudnnBackend::Impl::reshape(ExecContext& ctx, int windows, int width) const {
  if (ctx.windows == windows && ctx.width == width) return;
  ctx.windows = ctx.width = -1;  // stays invalid if anything below throws
  const int dirs = config.directions();
  // Sequence-major, every sequence the full window (run() transposes the caller's N × W × F on the host).
  const std::vector<int> lengths(static_cast<std::size_t>(windows), width);
  ETS_CUDNN_CHECK(cudnnSetRNNDataDescriptor(ctx.x_desc.get(), CUDNN_DATA_FLOAT,
                                            CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, width, windows,
                                            config.input_size, lengths.data(), nullptr));
  ETS_CUDNN_CHECK(cudnnSetRNNDataDescriptor(ctx.y_desc.get(), CUDNN_DATA_FLOAT,
                                            CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, width, windows,
                                            config.hidden * dirs, lengths.data(), nullptr));
  const int h_dims[3] = {config.layers * dirs, windows, config.hidden};
  const int h_strides[3] = {windows * config.hidden, config.hidden, 1};
  ETS_CUDNN_CHECK(cudnnSetTensorNdDescriptor(ctx.h_desc.get(), CUDNN_DATA_FLOAT, 3, h_dims, h_strides));
  select_plan(ctx, 0);
  const std::size_t positions = static_cast<std::size_t>(windows) * static_cast<std::size_t>(width);
  ctx.x.reserve(positions * config.input_size * sizeof(float));
  ctx.y.reserve(positions * config.hidden * dirs * sizeof(float));
  ctx.out.reserve(positions * config.outputs * sizeof(float));
  ctx.x_host.reserve(positions * config.input_size * sizeof(float));
  ctx.out_host.reserve(positions * config.outputs * sizeof(float));
  ctx.windows = windows;
  ctx.width = width;
}

void CudnnBackend::Impl::run(ExecContext& ctx, const float* x, int windows, int width, float* y) const {
  reshape(ctx, windows, width);
  const int dirs = config.directions();
  const std::size_t n_windows = static_cast<std::size_t>(windows), w_steps = static_cast<std::size_t>(width);
  const std::size_t positions = n_windows * w_steps;
  const std::size_t f = static_cast<std::size_t>(config.input_size);
  cudaStream_t stream = ctx.stream.get();
  // N × W × F (batch-major) → W × N × F (sequence-major) while staging into pinned memory.
  float* xs = ctx.x_host.as<float>();
  for (std::size_t n = 0; n < n_windows; ++n)
    for (std::size_t t = 0; t < w_steps; ++t)
      std::copy_n(x + (n * w_steps + t) * f, f, xs + (t * n_windows + n) * f);
  ETS_CUDA_CHECK(cudaMemcpyAsync(ctx.x.get(), xs, positions * f * sizeof(float), cudaMemcpyHostToDevice, stream));
  // Zero initial states (hx/cx = null), no final states wanted, no reserve space in inference mode.
  // devSeqLengths is null: cuDNN >= 8.9.1 takes the lengths from the data descriptors.
  for (;;) {
    const Plan& plan = *plans[ctx.plan];
    const cudnnStatus_t s =
        cudnnRNNForward(ctx.cudnn.get(), ctx.rnn[ctx.plan].get(), CUDNN_FWD_MODE_INFERENCE, nullptr,
                        ctx.x_desc.get(), ctx.x.get(), ctx.y_desc.get(), ctx.y.get(), ctx.h_desc.get(), nullptr,
                        nullptr, ctx.h_desc.get(), nullptr, nullptr, plan.weight_bytes, plan.weight_space.get(),
                        ctx.work_bytes, ctx.work.get(), 0, nullptr);
    if (s == CUDNN_STATUS_SUCCESS) break;
    if (ctx.plan + 1 == plans.size() || !unsupported(s)) ETS_CUDNN_CHECK_NAMED(s, "cudnnRNNForward");
    // Declined at launch although the size query accepted the shape: the next plan, for this shape from now on.
    // The shape stays marked unset until a plan is chosen, so a throw in between cannot leave a stale choice.
    const int shape_windows = ctx.windows;
    ctx.windows = -1;
    select_plan(ctx, ctx.plan + 1);
    ctx.windows = shape_windows;
  }
  // Head over all positions at once. Row-major out (P × O) = Y (P × DH) · Wᵀ is, in cuBLAS's
  // column-major terms, out' (O × P) = W'ᵀ (O × DH) · Y' (DH × P) with W' = head_w read as DH × O.
  const float one = 1.0f, zero = 0.0f;
  const int dh = config.hidden * dirs;
  ETS_CUBLAS_CHECK_NAMED(detail::cublas_api().sgemm(ctx.cublas.get(), CUBLAS_OP_T, CUBLAS_OP_N, config.outputs,
                                                    static_cast<int>(positions), dh, &one, head_w.as<const float>(),
                                                    dh, ctx.y.as<const float>(), dh, &zero, ctx.out.as<float>(),
                                                    config.outputs),
                         "cublasSgemm");
  ETS_CUDA_CHECK(cudaMemcpyAsync(ctx.out_host.as<float>(), ctx.out.get(), positions * config.outputs * sizeof(float),
                                 cudaMemcpyDeviceToHost, stream));
  ETS_CUDA_CHECK(cudaStreamSynchronize(stream));
  // Back to the caller's batch-major order, adding the head bias.
  const std::size_t o = static_cast<std::size_t>(config.outputs);
  const float* out = ctx.out_host.as<float>();
  for (std::size_t t = 0; t < w_steps; ++t)
    for (std::size_t n = 0; n < n_windows; ++n)
      for (std::size_t k = 0; k < o; ++k)
        y[(n * w_steps + t) * o + k] = out[(t * n_windows + n) * o + k] + head_b[k];
}

CudnnBackend::CudnnBackend(const LstmWeights& weights, const CudnnOptions& options) : impl_(std::make_unique<Impl>()) {
  validate(weights);
  std::string why;
  if (!device_available(&why)) ETS_THROW(Errc::backend, "ets.cuda.1", "{}", why);
  int count = 0;
  ETS_CUDA_CHECK(cudaGetDeviceCount(&count));
  ETS_CHECK(options.device >= 0 && options.device < count, Errc::invalid_argument, "ets.cuda.8",
            "CUDA device {} requested, {} present", options.device, count);
  impl_->config = weights.config;
  impl_->device = options.device;
  DeviceScope scope(options.device);
  auto ctx = impl_->make_context();  // no plan yet: handles only
  const std::pair<cudnnRNNAlgo_t, const char*> candidates[] = {
      {CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H, "persistent"}, {CUDNN_RNN_ALGO_STANDARD, "standard"}};
  for (const auto& [algo, name] : candidates) {
    auto plan = std::make_unique<Plan>();
    plan->algo = algo;
    plan->name = name;
    auto rnn = create<RnnDescPtr>([](cudnnRNNDescriptor_t* d) { ETS_CUDNN_CHECK(cudnnCreateRNNDescriptor(d)); });
    const cudnnStatus_t s = impl_->set_rnn(*ctx, rnn.get(), algo);
    // The persistent kernels are an optimisation: a configuration cuDNN declines runs on the standard algorithm.
    // Anything else (a packing mismatch, a CUDA error) is an error, as on the standard path.
    if (algo != CUDNN_RNN_ALGO_STANDARD && unsupported(s)) continue;
    ETS_CUDNN_CHECK_NAMED(s, fmt::format("cudnnSetRNNDescriptor_v8 ({} algorithm)", name));
    impl_->plans.push_back(std::move(plan));
    ctx->rnn.push_back(std::move(rnn));
    impl_->pack(*ctx, impl_->plans.size() - 1, weights);
  }
  impl_->head_w.reserve(weights.head_w.size() * sizeof(float));
  ETS_CUDA_CHECK(cudaMemcpy(impl_->head_w.get(), weights.head_w.data(), weights.head_w.size() * sizeof(float),
                            cudaMemcpyHostToDevice));
  impl_->head_b = weights.head_b;
  ETS_CUDA_CHECK(cudaDeviceSynchronize());  // as in pack(): the non-blocking streams must see the whole head
  cudaDeviceProp prop{};
  ETS_CUDA_CHECK(cudaGetDeviceProperties(&prop, options.device));
  const std::size_t v = cudnnGetVersion();
  std::string algos;
  for (const auto& p : impl_->plans) algos += fmt::format("{}{}", algos.empty() ? "" : " + ", p->name);
  impl_->description = fmt::format("{} (sm_{}{}), cuDNN {}.{}.{}, {} RNN", prop.name, prop.major, prop.minor,
                                   v / 10000, (v % 10000) / 100, v % 100, algos);
  impl_->idle.push_back(std::move(ctx));
}

CudnnBackend::~CudnnBackend() {
  if (!impl_) return;
  // Handles and buffers belong to the backend's device; release them there.
  int previous = 0;
  const bool switched = cudaGetDevice(&previous) == cudaSuccess && previous != impl_->device &&
                        cudaSetDevice(impl_->device) == cudaSuccess;
  impl_.reset();
  if (switched) (void)cudaSetDevice(previous);
}

const LstmConfig& CudnnBackend::config() const noexcept { return impl_->config; }

std::string CudnnBackend::description() const { return impl_->description; }

void CudnnBackend::forward(const float* x, int windows, int width, float* y) const {
  ETS_CHECK(windows >= 0 && width > 0, Errc::invalid_argument, "ets.cuda.8",
            "forward() needs windows >= 0 and width > 0 (got {} × {})", windows, width);
  // cuDNN and cuBLAS take the position count as int: more would wrap (the CPU backend refuses it too)
  ETS_CHECK(static_cast<std::int64_t>(windows) * width <= std::numeric_limits<std::int32_t>::max(),
            Errc::invalid_argument, "ets.cuda.8", "forward() of {} windows × {} positions exceeds 2^31 − 1 positions",
            windows, width);
  if (windows == 0) return;
  ETS_CHECK(x != nullptr && y != nullptr, Errc::invalid_argument, "ets.cuda.8", "forward() got a null buffer");
  DeviceScope scope(impl_->device);
  std::unique_ptr<ExecContext> ctx;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (!impl_->idle.empty()) {
      ctx = std::move(impl_->idle.back());
      impl_->idle.pop_back();
    }
  }
  if (!ctx) ctx = impl_->make_context();
  // A context whose call failed may hold a half-set shape or a poisoned stream: drop it, never reuse.
  const auto in_stride = static_cast<std::size_t>(width) * static_cast<std::size_t>(impl_->config.input_size);
  const auto out_stride = static_cast<std::size_t>(width) * static_cast<std::size_t>(impl_->config.outputs);
  const int per_call = std::max(1, kMaxPositionsPerCall / width);
  for (int first = 0, n = 0; first < windows; first += n) {  // first + n <= windows: no overflow
    n = std::min(per_call, windows - first);
    impl_->run(*ctx, x + static_cast<std::size_t>(first) * in_stride, n, width,
               y + static_cast<std::size_t>(first) * out_stride);
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->idle.push_back(std::move(ctx));
}

std::unique_ptr<InferenceBackend> make_cudnn_backend(const LstmWeights& weights, const CudnnOptions& options) {
  return std::make_unique<CudnnBackend>(weights, options);
}

void enable() noexcept {
  ets::detail::set_cuda_backend_factory(
      [](const LstmWeights& w) -> std::unique_ptr<InferenceBackend> { return make_cudnn_backend(w); });
}

}  // namespace ets::cuda
