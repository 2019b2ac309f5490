// SPDX-License-Identifier: BSD-3-Clause
//
// The c10d ProcessGroup "droce": PyTorch's collectives over droce
// (docs/python.md). Thin: tensors are checked and laid out here, the
// collectives themselves are python/csrc/coll.c over one droce context per
// rank. One worker thread per group owns that context from its creation to
// its end (one thread drives a context) and runs the operations in the
// order they were issued, as every rank issues them; a Work completes when
// its operation is done on this rank, and its future carries the outputs
// (what DDP's communication hooks wait on).

#include <torch/extension.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <pybind11/chrono.h>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

extern "C" {
#include "coll.h"
}

namespace droce_torch {

using c10d::OpType;
using c10d::ReduceOp;

// ---------------------------------------------------------------- reduce --

struct Sum {
  template <typename T> T operator()(T a, T b) const { return a + b; }
};
struct Prod {
  template <typename T> T operator()(T a, T b) const { return a * b; }
};
struct Min {
  template <typename T> T operator()(T a, T b) const { return b < a ? b : a; }
};
struct Max {
  template <typename T> T operator()(T a, T b) const { return a < b ? b : a; }
};
struct BAnd {
  template <typename T> T operator()(T a, T b) const { return a & b; }
};
struct BOr {
  template <typename T> T operator()(T a, T b) const { return a | b; }
};
struct BXor {
  template <typename T> T operator()(T a, T b) const { return a ^ b; }
};

// The reduction runs over every byte a peer sends, once per chunk, from a
// receive slot into the output (which never overlap: __restrict). -O2's
// vectoriser cost model ("very cheap") leaves a loop of unknown trip count
// scalar, so these loops ask for the dynamic model, and are compiled twice:
// for the baseline ISA (SSE2) and for AVX2, picked at run time. Each element
// is still f(a[i], b[i]) alone (no reassociation), so every result is the
// same bit for bit whichever copy runs.
#if defined(__GNUC__) && !defined(__clang__)  // clang's vectoriser needs no asking
#pragma GCC push_options
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif
template <typename T, typename F>
inline void reduceBody(T* __restrict a, const T* __restrict b, size_t n) {
  F f;
  for (size_t i = 0; i < n; i++)
    a[i] = f(a[i], b[i]);
}

template <typename T, typename F>
void reduceLoop(void* dst, const void* src, size_t n, void*) {
  reduceBody<T, F>(static_cast<T*>(dst), static_cast<const T*>(src), n);
}

template <typename T, typename F>
__attribute__((target("avx2"))) void reduceLoopAvx2(void* dst, const void* src, size_t n, void*) {
  reduceBody<T, F>(static_cast<T*>(dst), static_cast<const T*>(src), n);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

template <typename T, typename F>
dcoll_reduce_fn pick() {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2 ? reduceLoopAvx2<T, F> : reduceLoop<T, F>;
}

template <typename T>
dcoll_reduce_fn arithmetic(ReduceOp::RedOpType op) {
  switch (op) {
    case ReduceOp::SUM: return pick<T, Sum>();
    case ReduceOp::PRODUCT: return pick<T, Prod>();
    case ReduceOp::MIN: return pick<T, Min>();
    case ReduceOp::MAX: return pick<T, Max>();
    default: return nullptr;
  }
}

template <typename T>
dcoll_reduce_fn integral(ReduceOp::RedOpType op) {
  switch (op) {
    case ReduceOp::BAND: return pick<T, BAnd>();
    case ReduceOp::BOR: return pick<T, BOr>();
    case ReduceOp::BXOR: return pick<T, BXor>();
    default: return arithmetic<T>(op);
  }
}

dcoll_reduce_fn reduceFn(at::ScalarType t, const ReduceOp& rop) {
  ReduceOp::RedOpType op = rop;
  dcoll_reduce_fn f = nullptr;
  switch (t) {
    case at::kFloat: f = arithmetic<float>(op); break;
    case at::kDouble: f = arithmetic<double>(op); break;
    case at::kHalf: f = arithmetic<c10::Half>(op); break;
    case at::kBFloat16: f = arithmetic<c10::BFloat16>(op); break;
    case at::kInt: f = integral<int32_t>(op); break;
    case at::kLong: f = integral<int64_t>(op); break;
    case at::kShort: f = integral<int16_t>(op); break;
    case at::kChar: f = integral<int8_t>(op); break;
    case at::kByte: f = integral<uint8_t>(op); break;
    default: break;
  }
  TORCH_CHECK(f, "droce: reduction ", static_cast<int>(op), " on ", t, " is not supported "
              "(sum, product, min, max on float32/64, float16, bfloat16 and integers; "
              "band/bor/bxor on integers)");
  return f;
}

// ------------------------------------------------------------------ work --

class WorkDroce : public c10d::Work {
 public:
  WorkDroce(int rank, OpType t, std::vector<at::Tensor> outputs,
            std::shared_ptr<int> source = nullptr)
      : c10d::Work(rank, t),
        outputs_(std::move(outputs)),
        source_(std::move(source)),
        future_(c10::make_intrusive<at::ivalue::Future>(
            c10::ListType::create(c10::TensorType::get()))) {}

  std::vector<at::Tensor> result() override { return outputs_; }

  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

  // a receive from any source: the rank it came from, once done (wait())
  int sourceRank() const override {
    TORCH_CHECK(source_ && *source_ >= 0, "droce: sourceRank() of an operation that is not a "
                "completed receive from any source");
    return *source_;
  }

  void complete(std::exception_ptr e) {
    finish(e);
    if (e)
      future_->setError(e);
    else
      future_->markCompleted(c10::IValue(outputs_));
  }

 private:
  std::vector<at::Tensor> outputs_;
  std::shared_ptr<int> source_;  // written by the worker before complete()
  c10::intrusive_ptr<at::ivalue::Future> future_;
};

// ----------------------------------------------------------------- group --

static std::string env(const char* name, const char* dflt = "") {
  const char* v = std::getenv(name);
  return v && *v ? v : dflt;
}

static size_t envSize(const char* name, size_t dflt) {
  std::string v = env(name);
  if (v.empty())
    return dflt;
  char* end = nullptr;
  unsigned long long x = std::strtoull(v.c_str(), &end, 0);
  size_t mult = 1;
  if (end && (*end == 'k' || *end == 'K'))
    mult = 1024;
  else if (end && (*end == 'm' || *end == 'M'))
    mult = 1024 * 1024;
  else
    TORCH_CHECK(end && !*end, "droce: ", name, "='", v, "' is not a size");
  return static_cast<size_t>(x) * mult;
}

class ProcessGroupDroce : public c10d::ProcessGroup {
 public:
  ProcessGroupDroce(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                    std::chrono::milliseconds timeout)
      : c10d::ProcessGroup(rank, size), store_(store), timeout_(timeout) {
    dcoll_conf_init(&conf_);
    conf_.rank = rank;
    conf_.size = size;
    conf_.store.set = storeSet;
    conf_.store.get = storeGet;
    conf_.store.arg = this;
    port_ = env("DROCE_TORCH_PORT");
    ip_ = env("DROCE_TORCH_IP");
    eal_ = env("DROCE_EAL");
    cc_ = env("DROCE_TORCH_CC");
    conf_.port = port_.empty() ? nullptr : port_.c_str();
    conf_.ip = ip_.empty() ? nullptr : ip_.c_str();
    conf_.eal = eal_.empty() ? nullptr : eal_.c_str();
    conf_.cc = cc_.empty() ? nullptr : cc_.c_str();
    conf_.slot_bytes = envSize("DROCE_TORCH_SLOT_BYTES", conf_.slot_bytes);
    conf_.slots = static_cast<unsigned>(envSize("DROCE_TORCH_SLOTS", conf_.slots));
    conf_.small_max = envSize("DROCE_TORCH_SMALL_MAX", conf_.small_max);
    conf_.verbose = !env("DROCE_TORCH_VERBOSE").empty();
    conf_.timeout_ns = static_cast<uint64_t>(timeout.count()) * 1000000ull;
    std::promise<std::string> up;
    std::future<std::string> upf = up.get_future();
    worker_ = std::thread([this, &up] { run(up); });
    std::string err = upf.get();
    if (!err.empty()) {
      worker_.join();
      TORCH_CHECK(false, "droce: process group setup failed: ", err);
    }
    init();
  }

  ~ProcessGroupDroce() override {
    {
      std::lock_guard<std::mutex> l(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    if (worker_.joinable())
      worker_.join();
  }

  const std::string getBackendName() const override { return "droce"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override {
    at::Tensor t = one(tensors, "broadcast");
    int root = static_cast<int>(opts.rootRank);
    at::Tensor w = t.contiguous();
    return enqueue(OpType::BROADCAST, {t}, [=](dcoll* d) {
      int r = dcoll_broadcast(d, w.data_ptr(), w.nbytes(), root);
      if (!r && !w.is_same(t))
        t.copy_(w);
      return r;
    });
  }

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override {
    at::Tensor t = one(tensors, "allreduce");
    dcoll_reduce_fn fn = reduceFn(t.scalar_type(), opts.reduceOp);
    at::Tensor w = t.contiguous();
    return enqueue(OpType::ALLREDUCE, {t}, [=](dcoll* d) {
      int r = dcoll_allreduce(d, w.data_ptr(), w.numel(), w.element_size(), fn, nullptr);
      if (!r && !w.is_same(t))
        t.copy_(w);
      return r;
    });
  }

  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override {
    std::vector<at::Tensor> ws;
    std::vector<dcoll_reduce_fn> fns;
    for (auto& t : tensors) {
      check(t, "allreduce_coalesced");
      fns.push_back(reduceFn(t.scalar_type(), opts.reduceOp));
      ws.push_back(t.contiguous());
    }
    std::vector<at::Tensor> ts = tensors;
    return enqueue(OpType::ALLREDUCE_COALESCED, ts, [=](dcoll* d) {
      for (size_t i = 0; i < ws.size(); i++) {
        int r = dcoll_allreduce(d, ws[i].data_ptr(), ws[i].numel(), ws[i].element_size(), fns[i],
                                nullptr);
        if (r)
          return r;
        if (!ws[i].is_same(ts[i]))
          ts[i].copy_(ws[i]);
      }
      return 0;
    });
  }

  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override {
    // an all_reduce whose result only the root keeps
    at::Tensor t = one(tensors, "reduce");
    dcoll_reduce_fn fn = reduceFn(t.scalar_type(), opts.reduceOp);
    at::Tensor w = t.contiguous().clone();
    bool root = opts.rootRank == getRank();
    return enqueue(OpType::REDUCE, {t}, [=](dcoll* d) {
      int r = dcoll_allreduce(d, w.data_ptr(), w.numel(), w.element_size(), fn, nullptr);
      if (!r && root)
        t.copy_(w);
      return r;
    });
  }

  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions&) override {
    at::Tensor in = one(inputs, "allgather").contiguous();
    TORCH_CHECK(outputs.size() == 1 && outputs[0].size() == static_cast<size_t>(getSize()),
                "droce: allgather wants one list of ", getSize(), " output tensors");
    for (auto& o : outputs[0]) {
      check(o, "allgather");
      TORCH_CHECK(o.numel() == in.numel() && o.scalar_type() == in.scalar_type(),
                  "droce: allgather output tensors must match the input");
    }
    std::vector<at::Tensor> outs = outputs[0];
    at::Tensor flat = at::empty({getSize() * in.numel()}, in.options());
    return enqueue(OpType::ALLGATHER, outs, [=](dcoll* d) {
      int r = dcoll_allgather(d, in.data_ptr(), flat.data_ptr(), in.nbytes());
      for (size_t i = 0; !r && i < outs.size(); i++)
        outs[i].copy_(flat.narrow(0, i * in.numel(), in.numel()).view(outs[i].sizes()));
      return r;
    });
  }

  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions&) override {
    check(input, "_allgather_base");
    check(output, "_allgather_base");
    TORCH_CHECK(output.numel() == input.numel() * getSize() &&
                    output.scalar_type() == input.scalar_type(),
                "droce: _allgather_base output must hold world_size inputs");
    at::Tensor in = input.contiguous(), out = output, w = output.contiguous();
    return enqueue(OpType::_ALLGATHER_BASE, {out}, [=](dcoll* d) {
      int r = dcoll_allgather(d, in.data_ptr(), w.data_ptr(), in.nbytes());
      if (!r && !w.is_same(out))
        out.copy_(w);
      return r;
    });
  }

  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override {
    at::Tensor in = one(inputs, "gather").contiguous();
    int root = static_cast<int>(opts.rootRank);
    std::vector<at::Tensor> outs;
    if (getRank() == root) {
      TORCH_CHECK(outputs.size() == 1 && outputs[0].size() == static_cast<size_t>(getSize()),
                  "droce: gather wants one list of ", getSize(), " output tensors on the root");
      for (auto& o : outputs[0]) {
        check(o, "gather");
        TORCH_CHECK(o.numel() == in.numel() && o.scalar_type() == in.scalar_type(),
                    "droce: gather output tensors must match the input");
      }
      outs = outputs[0];
    } else {
      TORCH_CHECK(outputs.empty() || outputs[0].empty(),
                  "droce: gather takes output tensors on the root only");
    }
    at::Tensor flat = getRank() == root ? at::empty({getSize() * in.numel()}, in.options())
                                        : at::Tensor();
    return enqueue(OpType::GATHER, outs, [=](dcoll* d) {
      int r = dcoll_gather(d, in.data_ptr(), flat.defined() ? flat.data_ptr() : nullptr,
                           in.nbytes(), root);
      for (size_t i = 0; !r && i < outs.size(); i++)
        outs[i].copy_(flat.narrow(0, i * in.numel(), in.numel()).view(outs[i].sizes()));
      return r;
    });
  }

  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override {
    at::Tensor out = one(outputs, "scatter");
    int root = static_cast<int>(opts.rootRank);
    at::Tensor in;
    if (getRank() == root) {
      TORCH_CHECK(inputs.size() == 1 && inputs[0].size() == static_cast<size_t>(getSize()),
                  "droce: scatter wants one list of ", getSize(), " input tensors on the root");
      std::vector<at::Tensor> flat;
      for (auto& i : inputs[0]) {
        check(i, "scatter");
        TORCH_CHECK(i.numel() == out.numel() && i.scalar_type() == out.scalar_type(),
                    "droce: scatter input tensors must match the output");
        flat.push_back(i.reshape({-1}));
      }
      in = at::cat(flat);
    } else {
      TORCH_CHECK(inputs.empty() || inputs[0].empty(),
                  "droce: scatter takes input tensors on the root only");
    }
    at::Tensor w = out.contiguous();
    return enqueue(OpType::SCATTER, {out}, [=](dcoll* d) {
      int r = dcoll_scatter(d, in.defined() ? in.data_ptr() : nullptr, w.data_ptr(), w.nbytes(),
                            root);
      if (!r && !w.is_same(out))
        out.copy_(w);
      return r;
    });
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override {
    at::Tensor out = one(outputs, "reduce_scatter");
    TORCH_CHECK(inputs.size() == 1 && inputs[0].size() == static_cast<size_t>(getSize()),
                "droce: reduce_scatter wants one list of ", getSize(), " input tensors");
    for (auto& i : inputs[0])
      TORCH_CHECK(i.numel() == out.numel() && i.scalar_type() == out.scalar_type(),
                  "droce: reduce_scatter input tensors must match the output");
    dcoll_reduce_fn fn = reduceFn(out.scalar_type(), opts.reduceOp);
    std::vector<at::Tensor> flat_in;
    for (auto& i : inputs[0])
      flat_in.push_back(i.reshape({-1}));
    at::Tensor in = at::cat(flat_in);
    at::Tensor w = out.contiguous();
    return enqueue(OpType::REDUCE_SCATTER, {out}, [=](dcoll* d) {
      int r = dcoll_reduce_scatter(d, in.data_ptr(), w.data_ptr(), w.numel(), w.element_size(),
                                   fn, nullptr);
      if (!r && !w.is_same(out))
        out.copy_(w);
      return r;
    });
  }

  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override {
    check(input, "_reduce_scatter_base");
    check(output, "_reduce_scatter_base");
    TORCH_CHECK(input.numel() == output.numel() * getSize() &&
                    output.scalar_type() == input.scalar_type(),
                "droce: _reduce_scatter_base input must hold world_size outputs");
    dcoll_reduce_fn fn = reduceFn(output.scalar_type(), opts.reduceOp);
    at::Tensor in = input.contiguous(), out = output, w = output.contiguous();
    return enqueue(OpType::_REDUCE_SCATTER_BASE, {out}, [=](dcoll* d) {
      int r = dcoll_reduce_scatter(d, in.data_ptr(), w.data_ptr(), w.numel(), w.element_size(),
                                   fn, nullptr);
      if (!r && !w.is_same(out))
        out.copy_(w);
      return r;
    });
  }

  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outSplits,
                                               std::vector<int64_t>& inSplits,
                                               const c10d::AllToAllOptions&) override {
    check(input, "alltoall_base");
    check(output, "alltoall_base");
    TORCH_CHECK(input.scalar_type() == output.scalar_type(),
                "droce: alltoall input and output types differ");
    std::vector<size_t> soff, slen, roff, rlen;
    splits(input, inSplits, soff, slen);
    splits(output, outSplits, roff, rlen);
    at::Tensor in = input.contiguous(), out = output, w = output.contiguous();
    return enqueue(OpType::ALLTOALL_BASE, {out}, [=](dcoll* d) {
      int r = dcoll_alltoallv(d, in.data_ptr(), soff.data(), slen.data(), w.data_ptr(),
                              roff.data(), rlen.data());
      if (!r && !w.is_same(out))
        out.copy_(w);
      return r;
    });
  }

  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions&) override {
    size_t n = static_cast<size_t>(getSize());
    TORCH_CHECK(outputs.size() == n && inputs.size() == n, "droce: alltoall wants ", n,
                " input and ", n, " output tensors");
    std::vector<size_t> soff(n), slen(n), roff(n), rlen(n);
    std::vector<at::Tensor> ins, outs = outputs;
    size_t so = 0, ro = 0;
    for (size_t j = 0; j < n; j++) {
      check(inputs[j], "alltoall");
      check(outputs[j], "alltoall");
      TORCH_CHECK(inputs[j].scalar_type() == inputs[0].scalar_type() &&
                      outputs[j].scalar_type() == inputs[0].scalar_type(),
                  "droce: alltoall tensors must share one type");
      ins.push_back(inputs[j].reshape({-1}));
      soff[j] = so;
      slen[j] = inputs[j].nbytes();
      so += slen[j];
      roff[j] = ro;
      rlen[j] = outputs[j].nbytes();
      ro += rlen[j];
    }
    at::Tensor in = at::cat(ins);
    at::Tensor flat = at::empty({static_cast<int64_t>(ro / inputs[0].element_size())},
                                inputs[0].options());
    return enqueue(OpType::ALLTOALL, outs, [=](dcoll* d) {
      int r = dcoll_alltoallv(d, in.data_ptr(), soff.data(), slen.data(), flat.data_ptr(),
                              roff.data(), rlen.data());
      size_t es = flat.element_size();
      for (size_t j = 0; !r && j < outs.size(); j++)
        outs[j].copy_(flat.narrow(0, roff[j] / es, rlen[j] / es).view(outs[j].sizes()));
      return r;
    });
  }

  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst,
                                      int tag) override {
    at::Tensor t = one(tensors, "send").contiguous();
    return enqueue(OpType::SEND, {t}, [=](dcoll* d) {
      return dcoll_send(d, dst, t.data_ptr(), t.nbytes(), tag);
    });
  }

  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src,
                                      int tag) override {
    at::Tensor t = one(tensors, "recv");
    at::Tensor w = t.contiguous();
    return enqueue(OpType::RECV, {t}, [=](dcoll* d) {
      int r = dcoll_recv(d, src, w.data_ptr(), w.nbytes(), tag);
      if (!r && !w.is_same(t))
        t.copy_(w);
      return r;
    });
  }

  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors,
                                               int tag) override {
    at::Tensor t = one(tensors, "recv");
    at::Tensor w = t.contiguous();
    auto src = std::make_shared<int>(-1);
    return enqueue(OpType::RECVANYSOURCE, {t}, [=](dcoll* d) {
      int r = dcoll_recv_any(d, w.data_ptr(), w.nbytes(), tag, src.get());
      if (!r && !w.is_same(t))
        t.copy_(w);
      return r;
    }, src);
  }

  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions&) override {
    return enqueue(OpType::BARRIER, {}, [](dcoll* d) { return dcoll_barrier(d); });
  }

  std::vector<uint64_t> stats() {
    // read on the worker, which owns the counters
    std::vector<uint64_t> v;
    auto w = enqueue(OpType::UNKNOWN, {}, [&v](dcoll* d) {
      dcoll_stats s;
      dcoll_get_stats(d, &s);
      v = {s.chunks_sent, s.chunks_rcvd, s.credits_sent, s.set_aside, s.naps, s.ring_ops,
           s.rd_ops};
      return 0;
    });
    w->wait();
    return v;
  }

 private:
  static int storeSet(void* arg, const char* key, const void* val, size_t len) {
    auto* self = static_cast<ProcessGroupDroce*>(arg);
    try {
      const uint8_t* b = static_cast<const uint8_t*>(val);
      self->store_->set(key, std::vector<uint8_t>(b, b + len));
      return 0;
    } catch (const std::exception&) {
      return -EIO;
    }
  }

  static int storeGet(void* arg, const char* key, void* val, size_t len, uint64_t timeout_ns) {
    auto* self = static_cast<ProcessGroupDroce*>(arg);
    try {
      self->store_->wait({key}, std::chrono::milliseconds(timeout_ns / 1000000));
      std::vector<uint8_t> v = self->store_->get(key);
      std::memcpy(val, v.data(), std::min(len, v.size()));
      return static_cast<int>(v.size());
    } catch (const std::exception&) {
      return -ETIMEDOUT;
    }
  }

  static void check(const at::Tensor& t, const char* op) {
    TORCH_CHECK(t.device().is_cpu(), "droce: ", op, ": CPU tensors only");
    TORCH_CHECK(t.layout() == at::kStrided, "droce: ", op, ": dense tensors only");
  }

  static at::Tensor one(std::vector<at::Tensor>& ts, const char* op) {
    TORCH_CHECK(ts.size() == 1, "droce: ", op, " takes one tensor per rank");
    check(ts[0], op);
    return ts[0];
  }

  void splits(const at::Tensor& t, const std::vector<int64_t>& sp, std::vector<size_t>& off,
              std::vector<size_t>& len) {
    size_t n = static_cast<size_t>(getSize());
    int64_t rows = t.dim() ? t.size(0) : 1;
    size_t row = rows ? t.nbytes() / static_cast<size_t>(rows) : 0;
    off.assign(n, 0);
    len.assign(n, 0);
    if (sp.empty()) {
      TORCH_CHECK(rows % static_cast<int64_t>(n) == 0, "droce: alltoall: ", rows,
                  " rows do not split evenly over ", n, " ranks");
      for (size_t j = 0; j < n; j++) {
        len[j] = row * static_cast<size_t>(rows) / n;
        off[j] = j * len[j];
      }
      return;
    }
    TORCH_CHECK(sp.size() == n, "droce: alltoall: ", sp.size(), " split sizes for ", n, " ranks");
    size_t o = 0;
    int64_t sum = 0;
    for (size_t j = 0; j < n; j++) {
      TORCH_CHECK(sp[j] >= 0, "droce: alltoall: negative split size");
      off[j] = o;
      len[j] = static_cast<size_t>(sp[j]) * row;
      o += len[j];
      sum += sp[j];
    }
    TORCH_CHECK(sum == rows, "droce: alltoall: split sizes add up to ", sum, ", not ", rows);
  }

  c10::intrusive_ptr<c10d::Work> enqueue(OpType type, std::vector<at::Tensor> outputs,
                                         std::function<int(dcoll*)> fn,
                                         std::shared_ptr<int> source = nullptr) {
    auto w = c10::make_intrusive<WorkDroce>(getRank(), type, std::move(outputs),
                                            std::move(source));
    {
      std::lock_guard<std::mutex> l(mutex_);
      TORCH_CHECK(!broken_.size(), "droce: the group failed before: ", broken_);
      queue_.push_back({w, std::move(fn)});
    }
    cv_.notify_one();
    return w;
  }

  struct Op {
    c10::intrusive_ptr<WorkDroce> work;
    std::function<int(dcoll*)> fn;
  };

  void run(std::promise<std::string>& up) {
    char err[256] = "";
    dcoll* d = dcoll_create(&conf_, err, sizeof(err));
    up.set_value(d ? "" : (err[0] ? err : "unknown error"));
    if (!d)
      return;
    for (;;) {
      Op op;
      {
        std::unique_lock<std::mutex> l(mutex_);
        while (queue_.empty() && !stop_) {
          // keep answering the peers (ACKs, credits) between operations
          l.unlock();
          dcoll_idle(d);
          l.lock();
          if (queue_.empty() && !stop_)
            cv_.wait_for(l, std::chrono::microseconds(100));
        }
        if (queue_.empty())
          break;
        op = std::move(queue_.front());
        queue_.pop_front();
      }
      std::exception_ptr e;
      int r = 0;
      try {
        r = op.fn(d);
      } catch (...) {
        e = std::current_exception();
      }
      if (r && !e) {
        // the engine's message names the rank already
        std::string msg = std::string("droce: ") + dcoll_error(d) + " (" + std::strerror(-r) + ")";
        {
          std::lock_guard<std::mutex> l(mutex_);
          broken_ = msg;
        }
        e = std::make_exception_ptr(std::runtime_error(msg));
      }
      op.work->complete(e);
    }
    dcoll_destroy(d);
  }

  c10::intrusive_ptr<c10d::Store> store_;
  std::chrono::milliseconds timeout_;
  std::string port_, ip_, eal_, cc_;
  dcoll_conf conf_;
  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Op> queue_;
  bool stop_ = false;
  std::string broken_;
};

static c10::intrusive_ptr<c10d::ProcessGroup> create(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    const std::chrono::duration<float>& timeout) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  return c10::make_intrusive<ProcessGroupDroce>(store, rank, size, ms);
}

}  // namespace droce_torch

PYBIND11_MODULE(_c10d, m) {
  m.doc() = "droce's c10d ProcessGroup (import droce.torch to register it)";
  m.def("create_process_group", &droce_torch::create, py::arg("store"), py::arg("rank"),
        py::arg("size"), py::arg("timeout"), py::call_guard<py::gil_scoped_release>(),
        "Create a droce process group (what torch.distributed calls for backend 'droce').");
  m.def(
      "stats",
      [](const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
        auto* d = dynamic_cast<droce_torch::ProcessGroupDroce*>(pg.get());
        TORCH_CHECK(d, "not a droce process group");
        auto v = d->stats();
        py::dict r;
        const char* names[] = {"chunks_sent", "chunks_rcvd", "credits_sent", "set_aside",
                               "naps", "ring_ops", "rd_ops"};
        for (size_t i = 0; i < v.size(); i++)
          r[names[i]] = v[i];
        return r;
      },
      py::arg("pg"), "The group's transfer counters.");
}
