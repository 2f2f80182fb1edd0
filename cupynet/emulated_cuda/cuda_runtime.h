// cuda_runtime.h -- just enough CUDA to run cupynet's kernels on the CPU, for the tests.
//
// The harness (cupynet/emulated_cuda/kernels.py) compiles a kernel's real source, the
// exact text the launcher hands to cupy.RawModule, as C++ with g++ and this header
// force-included (-include cuda_runtime.h). How CUDA maps onto the CPU here:
//
//   * one fiber (a ucontext_t with its own stack) per CUDA thread, all on the calling OS
//     thread; the blocks of a grid run one after another; a fiber runs until it waits
//     (at __syncthreads or a shuffle) or returns, then the next one runs (cooperative:
//     a block's threads are interleaved at the barriers, never preempted). Fibers cost
//     a stack switch where an OS thread per CUDA thread cost a clone and a join;
//   * __shared__ is `static`: one copy per kernel, which is one copy per block because
//     blocks do not overlap;
//   * __syncthreads() is a barrier over the block's running threads (a thread that has
//     returned drops out, as on the GPU); threads waiting at two different
//     __syncthreads() calls are a divergent barrier, and a block whose every running
//     thread waits with nobody able to release it is a deadlock: both are reported;
//   * warp shuffles go through per-warp slots and a warp barrier;
//   * atomicAdd is std::atomic_ref (C++20);
//   * __half / __nv_bfloat16 are 16-bit structs (cuda_fp16.h, cuda_bf16.h);
//   * CuPy compiles with -ftz=true: every emulated thread sets the CPU's flush-to-zero
//     and denormals-are-zero modes (MXCSR on x86-64) so that plain float arithmetic
//     flushes subnormals as the GPU does; the exact operations of common.cuh (inline
//     PTX on the GPU) run as IEEE host operations with those modes off (ieee() below);
//   * each launch checks every argument's size against the kernel's signature.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <math.h>
#include <mutex>  // NOTE: std::unique_lock and std::lock_guard, over the no-op Mutex below
#include <memory>
#include <string>
#include <system_error>
#include <ucontext.h>
#include <type_traits>
#include <utility>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __restrict__ __restrict

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};
typedef dim3 uint3;

inline thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;
constexpr int warpSize = 32;

namespace cupynet_emu {

inline std::string hex(unsigned v) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%08x", v);
    return text;
}

template <typename To, typename From>
inline To bit_cast(From from) {
    static_assert(sizeof(To) == sizeof(From), "bit_cast between types of different sizes");
    To to;
    std::memcpy(&to, &from, sizeof(To));
    return to;
}

// ---- the CPU's flush-to-zero mode: on to mirror -ftz=true, off for one exact operation ------

#if defined(__x86_64__) || defined(__i386__)
typedef unsigned FpMode;
constexpr FpMode FLUSH_TO_ZERO = 0x8040u;  // MXCSR.FTZ (bit 15) | MXCSR.DAZ (bit 6)
inline FpMode fp_mode() { FpMode m; asm volatile("stmxcsr %0" : "=m"(m) : : "memory"); return m; }
inline void set_fp_mode(FpMode m) { asm volatile("ldmxcsr %0" : : "m"(m) : "memory"); }
#elif defined(__aarch64__)
typedef unsigned long FpMode;
constexpr FpMode FLUSH_TO_ZERO = 1ul << 24;  // FPCR.FZ
inline FpMode fp_mode() { FpMode m; asm volatile("mrs %0, fpcr" : "=r"(m) : : "memory"); return m; }
inline void set_fp_mode(FpMode m) { asm volatile("msr fpcr, %0" : : "r"(m) : "memory"); }
#else
#error "the CUDA-on-CPU harness mirrors -ftz=true with the CPU's flush-to-zero mode: x86-64 or AArch64 only"
#endif

// NOTE: a compiler may move arithmetic across a mode switch (it does not know that the
// mode matters). The operands pass through memory after the switch and the result before
// the switch back ("+m" fences against the switches' "memory" clobbers), so the operation
// itself cannot leave the window in which flush-to-zero is off.
template <typename T>
inline void fence(T& v) { asm volatile("" : "+m"(v) : : "memory"); }

template <typename Op, typename... X>
inline auto ieee(Op op, X... x) {
    const FpMode mode = fp_mode();
    set_fp_mode(mode & ~FLUSH_TO_ZERO);
    (fence(x), ...);
    auto result = op(x...);
    fence(result);
    set_fp_mode(mode);
    return result;
}

// The host forms of common.cuh's inline PTX (its `#ifndef __CUDA_ARCH__` branch calls these).
inline float ieee_add(float a, float b) { return ieee([](float x, float y) { return x + y; }, a, b); }
inline float ieee_sub(float a, float b) { return ieee([](float x, float y) { return x - y; }, a, b); }
inline float ieee_mul(float a, float b) { return ieee([](float x, float y) { return x * y; }, a, b); }
inline float ieee_div(float a, float b) { return ieee([](float x, float y) { return x / y; }, a, b); }
inline float ieee_sqrt(float a) { return ieee([](float x) { return sqrtf(x); }, a); }
inline bool ieee_ge(float a, float b) { return ieee([](float x, float y) { return x >= y; }, a, b); }
inline bool ieee_lt(float a, float b) { return ieee([](float x, float y) { return x < y; }, a, b); }
inline double ieee_widen(float a) { return ieee([](float x) { return (double)x; }, a); }
inline float ieee_narrow(double a) { return ieee([](double x) { return (float)x; }, a); }

// ---- fibers: the CUDA threads of one block, taking turns on one OS thread ----------------------

void yield_to_scheduler();

// NOTE: every fiber runs on the same OS thread and none is preempted, so a lock has nothing to
// exclude; it stays (as a no-op) so the barrier code reads as the concurrent code it models.
struct Mutex {
    void lock() {}
    void unlock() {}
};

// A condition variable over fibers: wait() hands the OS thread to the next fiber until `ready`.
struct FiberCondition {
    void notify_all() {}
    template <typename Lock, typename Ready>
    void wait(Lock&, Ready ready) {
        while (!ready()) yield_to_scheduler();
    }
};

// ---- blocks, barriers and warps --------------------------------------------------------------

struct Abort {};  // unwinds a thread once its block has failed

struct Warp {
    unsigned running = 0;   // lanes that have not returned
    unsigned waiting = 0;   // lanes at the current shuffle
    unsigned mask = 0;      // the mask the current shuffle was called with
    int line = 0;           // where the current shuffle is
    unsigned long generation = 0;
    unsigned long long slots[2][32] = {};  // NOTE: two sets, used by alternate shuffles
    FiberCondition released;
};

struct Block {
    Mutex lock;
    FiberCondition released;   // __syncthreads
    std::string error;                  // the first failure; set -> every thread unwinds
    int running = 0;                    // threads that have not returned
    int blocked = 0;                    // threads waiting in a barrier nobody has released yet
    int arrived = 0, line = 0, first = 0, vote = 0, result = 0;   // the current __syncthreads
    unsigned long generation = 0;
    std::vector<Warp> warps;

    explicit Block(int n_threads) : running(n_threads), warps((n_threads + 31) / 32) {
        for (int t = 0; t < n_threads; ++t) warps[t / 32].running |= 1u << (t % 32);
    }

    void fail(const std::string& message) {  // called with the lock held
        if (error.empty()) error = message;
        released.notify_all();
        for (Warp& w : warps) w.released.notify_all();
    }

    std::string where_everyone_waits() const {
        std::string out = "";
        if (arrived) out += std::to_string(arrived) + " thread(s) at __syncthreads (source line " +
                            std::to_string(line) + ")";
        for (size_t w = 0; w < warps.size(); ++w) {
            if (!warps[w].waiting) continue;
            out += (out.empty() ? "" : ", ") + std::to_string(__builtin_popcount(warps[w].waiting)) +
                   " lane(s) of warp " + std::to_string(w) + " at a shuffle (source line " +
                   std::to_string(warps[w].line) + ")";
        }
        return out;
    }

    void release_barrier(int waited) {  // lets the threads at __syncthreads go; `waited` of them were blocked
        result = vote;
        blocked -= waited;
        arrived = vote = 0;
        generation += 1;
        released.notify_all();
    }

    void check_deadlock() {  // called with the lock held, after a thread started waiting
        if (running > 0 && blocked == running) {
            fail("deadlock: every running thread of block (" + std::to_string(blockIdx.x) + ", " +
                 std::to_string(blockIdx.y) + ", " + std::to_string(blockIdx.z) + ") waits: " + where_everyone_waits());
        }
    }
};

struct Self {
    Block* block;
    int thread;  // linear index in the block
};
inline thread_local Self self = {nullptr, 0};

// __syncthreads and its voting forms: returns the OR (or the count) of `vote` over the block.
inline int block_barrier(int vote, int line, bool count) {
    Block& b = *self.block;
    std::unique_lock<Mutex> hold(b.lock);
    if (!b.error.empty()) throw Abort();
    if (b.arrived == 0) {
        b.line = line;
        b.first = self.thread;
    } else if (line != b.line) {
        b.fail("divergent __syncthreads: thread " + std::to_string(self.thread) + " reached the barrier at source line " +
               std::to_string(line) + " while thread " + std::to_string(b.first) + " waits at source line " +
               std::to_string(b.line));
        throw Abort();
    }
    b.arrived += 1;
    if (count) b.vote += (vote != 0);
    else b.vote |= (vote != 0);
    if (b.arrived == b.running) {
        b.release_barrier(b.arrived - 1);  // NOTE: the releasing thread itself never waited
        return b.result;
    }
    const unsigned long generation = b.generation;
    b.blocked += 1;
    b.check_deadlock();
    b.released.wait(hold, [&] { return b.generation != generation || !b.error.empty(); });
    if (!b.error.empty()) throw Abort();
    return b.result;
}

// One warp shuffle: every lane of `mask` publishes its value, then reads lane src_of(lane)'s.
template <typename T, typename Src>
inline T shuffle(unsigned mask, T value, Src src_of, int line, const char* name) {
    static_assert(sizeof(T) <= 8, "a shuffled value has at most 8 bytes");
    Block& b = *self.block;
    const int lane = self.thread % 32;
    Warp& w = b.warps[self.thread / 32];
    std::unique_lock<Mutex> hold(b.lock);
    if (!b.error.empty()) throw Abort();
    auto at = [&] { return std::string(name) + " at source line " + std::to_string(line) + ": "; };
    if (!(mask >> lane & 1u) || (mask & ~w.running)) {
        b.fail(at() + "mask " + hex(mask) + " must name the calling lane " + std::to_string(lane) +
               " and only running lanes (running: " + hex(w.running) + ")");
        throw Abort();
    }
    if (w.waiting == 0) {
        w.line = line;
        w.mask = mask;
    } else if (line != w.line || mask != w.mask) {
        b.fail(at() + "divergent warp: lane " + std::to_string(lane) + " is here while other lanes wait at source line " +
               std::to_string(w.line));
        throw Abort();
    }
    const int set = w.generation & 1;
    unsigned long long slot = 0;
    std::memcpy(&slot, &value, sizeof(T));
    w.slots[set][lane] = slot;
    w.waiting |= 1u << lane;
    if (w.waiting == w.mask) {
        b.blocked -= __builtin_popcount(w.waiting) - 1;
        w.waiting = 0;
        w.generation += 1;
        w.released.notify_all();
    } else {
        const unsigned long generation = w.generation;
        b.blocked += 1;
        b.check_deadlock();
        w.released.wait(hold, [&] { return w.generation != generation || !b.error.empty(); });
        if (!b.error.empty()) throw Abort();
    }
    const int src = src_of(lane);
    if (src < 0 || src >= 32) return value;  // NOTE: out of the warp: the lane keeps its own value, as CUDA says
    if (!(mask >> src & 1u)) {
        b.fail(at() + "lane " + std::to_string(lane) + " reads lane " + std::to_string(src) + ", which is not in the mask");
        throw Abort();
    }
    T out;
    std::memcpy(&out, &w.slots[set][src], sizeof(T));
    return out;
}

inline void thread_returned() {
    Block& b = *self.block;
    std::lock_guard<Mutex> hold(b.lock);
    const int lane = self.thread % 32;
    Warp& w = b.warps[self.thread / 32];
    b.running -= 1;
    w.running &= ~(1u << lane);
    if (!b.error.empty()) return;
    if (w.waiting && (w.mask >> lane & 1u)) {
        b.fail("lane " + std::to_string(lane) + " of warp " + std::to_string(self.thread / 32) +
               " returned while its warp waits for it at a shuffle (source line " + std::to_string(w.line) + ")");
        return;
    }
    if (b.arrived && b.arrived == b.running) {  // the last thread the barrier waited for has returned
        b.release_barrier(b.arrived);
        return;
    }
    b.check_deadlock();
}

// ---- launching a kernel ------------------------------------------------------------------------

template <typename T>
constexpr char kind_of() {
    if constexpr (std::is_pointer_v<T>) return 'p';
    else if constexpr (std::is_floating_point_v<T> || (sizeof(T) == 2 && std::is_class_v<T>)) return 'f';  // __half
    else if constexpr (std::is_integral_v<T>) return 'i';
    else return '?';
}

template <typename T>
constexpr long long size_of() {
    if constexpr (std::is_void_v<T>) return 0;
    else return (long long)sizeof(T);
}

// The kernel's parameters: size and kind ('i', 'f', 'p') of each, and of what each pointer points to.
template <typename... A>
int signature(void (*)(A...), long long* sizes, char* kinds, long long* pointee_sizes, char* pointee_kinds,
              int capacity) {
    int i = 0;
    auto one = [&](auto tag) {
        using T = typename decltype(tag)::type;
        using P = std::remove_cv_t<std::remove_pointer_t<T>>;
        if (i < capacity) {
            sizes[i] = sizeof(T);
            kinds[i] = kind_of<T>();
            pointee_sizes[i] = std::is_pointer_v<T> ? size_of<P>() : 0;
            pointee_kinds[i] = std::is_pointer_v<T> ? kind_of<P>() : ' ';
        }
        ++i;
    };
    (one(std::type_identity<A>{}), ...);
    return i;
}

template <typename... A, size_t... I>
void call(void (*kernel)(A...), void** args, std::index_sequence<I...>) {
    kernel(*static_cast<std::remove_reference_t<A>*>(args[I])...);
}

// One CUDA thread: the kernel, then it leaves the block.
template <typename... A>
void run_thread(void (*kernel)(A...), void** args, Block* b, int t) {
    try {
        call(kernel, args, std::index_sequence_for<A...>{});
    } catch (const Abort&) {
    } catch (const std::exception& e) {
        std::lock_guard<Mutex> hold(b->lock);
        b->fail("exception in thread " + std::to_string(t) + ": " + e.what());
    }
    thread_returned();
}

// The fibers of the running block and the scheduler that switches between them.
struct Fibers {
    static constexpr size_t STACK_BYTES = 256 * 1024;
    ucontext_t scheduler;
    std::vector<ucontext_t> contexts;
    std::vector<std::unique_ptr<char[]>> stacks;  // NOTE: uninitialised: a page is mapped when first used
    std::vector<char> done;
    int current = 0;
    void (*body)(void*, int) = nullptr;  // runs CUDA thread `t` of the block
    void* launch = nullptr;
};
inline thread_local Fibers* fibers = nullptr;

inline void yield_to_scheduler() {
    Fibers& f = *fibers;
    swapcontext(&f.contexts[f.current], &f.scheduler);
}

inline void fiber_entry() {
    Fibers& f = *fibers;
    f.body(f.launch, f.current);
    f.done[f.current] = 1;  // NOTE: returning resumes the scheduler (uc_link)
}

// Run one block: a fiber per thread, resumed in turn until every one has returned.
inline void run_block(Fibers& f, int n_threads, dim3 block, Block* b) {
    if ((int)f.stacks.size() < n_threads) f.stacks.resize(n_threads);
    f.contexts.assign(n_threads, ucontext_t{});
    f.done.assign(n_threads, 0);
    for (int t = 0; t < n_threads; ++t) {
        if (!f.stacks[t]) f.stacks[t].reset(new char[Fibers::STACK_BYTES]);
        ucontext_t& c = f.contexts[t];
        getcontext(&c);  // NOTE: after flush-to-zero was set: a fiber starts in the mode saved here
        c.uc_stack.ss_sp = f.stacks[t].get();
        c.uc_stack.ss_size = Fibers::STACK_BYTES;
        c.uc_link = &f.scheduler;
        makecontext(&c, fiber_entry, 0);
    }
    for (int remaining = n_threads; remaining > 0;) {
        for (int t = 0; t < n_threads; ++t) {
            if (f.done[t]) continue;
            f.current = t;
            threadIdx = dim3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
            self = Self{b, t};
            swapcontext(&f.scheduler, &f.contexts[t]);
            remaining -= f.done[t];
        }
    }
}

template <typename... A>
struct Launch {
    void (*kernel)(A...);
    void** args;
    Block* block;
    static void body(void* raw, int t) {
        Launch& l = *static_cast<Launch*>(raw);
        run_thread(l.kernel, l.args, l.block, t);
    }
};

// Run the grid: block after block, one fiber per CUDA thread. Returns 0, or 1 with a message.
template <typename... A>
int launch(void (*kernel)(A...), const unsigned* grid, const unsigned* block, void** args, char* message,
           int message_size) {
    const dim3 g{grid[0], grid[1], grid[2]}, d{block[0], block[1], block[2]};
    const int n_threads = int(d.x * d.y * d.z);
    static thread_local Fibers pool;  // NOTE: stacks are kept for the next launch on this OS thread
    fibers = &pool;
    const FpMode caller_mode = fp_mode();
    set_fp_mode(caller_mode | FLUSH_TO_ZERO);  // NOTE: -ftz=true, as CuPy compiles; the caller's mode comes back
    blockDim = d;
    gridDim = g;
    int status = 0;
    for (unsigned bz = 0; bz < g.z && !status; ++bz) for (unsigned by = 0; by < g.y && !status; ++by)
    for (unsigned bx = 0; bx < g.x; ++bx) {
        Block b(n_threads);
        blockIdx = dim3{bx, by, bz};
        Launch<A...> l{kernel, args, &b};
        pool.body = &Launch<A...>::body;
        pool.launch = &l;
        run_block(pool, n_threads, d, &b);
        if (!b.error.empty()) {
            std::snprintf(message, message_size, "block (%u, %u, %u): %s", bx, by, bz, b.error.c_str());
            status = 1;
            break;
        }
    }
    set_fp_mode(caller_mode);
    return status;
}

}  // namespace cupynet_emu

// ---- the CUDA functions the kernels call -------------------------------------------------------

inline void __syncthreads(int line = __builtin_LINE()) { cupynet_emu::block_barrier(0, line, false); }
inline int __syncthreads_or(int vote, int line = __builtin_LINE()) { return cupynet_emu::block_barrier(vote, line, false); }
inline int __syncthreads_count(int vote, int line = __builtin_LINE()) { return cupynet_emu::block_barrier(vote, line, true); }

template <typename T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32, int line = __builtin_LINE()) {
    return cupynet_emu::shuffle(mask, v, [=](int lane) { return lane % width + int(delta) < width ? lane + int(delta) : -1; },
                                line, "__shfl_down_sync");
}

template <typename T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32, int line = __builtin_LINE()) {
    return cupynet_emu::shuffle(mask, v, [=](int lane) { return lane % width >= int(delta) ? lane - int(delta) : -1; },
                                line, "__shfl_up_sync");
}

template <typename T>
inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32, int line = __builtin_LINE()) {
    return cupynet_emu::shuffle(mask, v, [=](int lane) { return lane ^ lane_mask; }, line, "__shfl_xor_sync");
}

template <typename T>
inline T __shfl_sync(unsigned mask, T v, int src_lane, int width = 32, int line = __builtin_LINE()) {
    return cupynet_emu::shuffle(mask, v, [=](int lane) { return lane / width * width + src_lane % width; }, line,
                                "__shfl_sync");
}

template <typename T>
inline T atomicAdd(T* address, T value) { return std::atomic_ref<T>(*address).fetch_add(value); }

inline float __uint_as_float(unsigned v) { return cupynet_emu::bit_cast<float>(v); }
inline unsigned __float_as_uint(float v) { return cupynet_emu::bit_cast<unsigned>(v); }
inline float __int_as_float(int v) { return cupynet_emu::bit_cast<float>(v); }
inline int __float_as_int(float v) { return cupynet_emu::bit_cast<int>(v); }

// Correctly rounded double operations (never flushed on a GPU: -ftz is about fp32 only).
inline double __dadd_rn(double a, double b) { return cupynet_emu::ieee([](double x, double y) { return x + y; }, a, b); }
inline double __dmul_rn(double a, double b) { return cupynet_emu::ieee([](double x, double y) { return x * y; }, a, b); }
inline double __ddiv_rn(double a, double b) { return cupynet_emu::ieee([](double x, double y) { return x / y; }, a, b); }
inline double __dsqrt_rn(double a) { return cupynet_emu::ieee([](double x) { return sqrt(x); }, a); }

#define CUPYNET_EMU_EXPORT(index, ...)                                                                       \
    extern "C" int cupynet_emu_signature_##index(long long* sizes, char* kinds, long long* pointee_sizes,     \
                                                  char* pointee_kinds, int capacity) {                       \
        return cupynet_emu::signature(&__VA_ARGS__, sizes, kinds, pointee_sizes, pointee_kinds, capacity);   \
    }                                                                                                        \
    extern "C" int cupynet_emu_launch_##index(const unsigned* grid, const unsigned* block, void** args,      \
                                               char* message, int message_size) {                            \
        return cupynet_emu::launch(&__VA_ARGS__, grid, block, args, message, message_size);                  \
    }
