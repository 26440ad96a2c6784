// codegen-lab: the trusted-verdict protocol for ParEval drivers (our code, not upstream's).
//
// Three programs, one verdict decided where no candidate code runs:
//   checker  = ParEval's own benchmark driver (cpu.cc: init, validate) with the candidate
//              function replaced by Stub::call, and checker_main. Built without candidate code.
//     record: Stub::call writes each call's arguments to calls.<rank>.bin and answers with the
//             baseline, so validate() walks through all its trials. An output parameter whose
//             incoming content is the baseline's answer to an earlier call (a vector validate()
//             reuses across trials) is recorded as a reference to that call, never as the
//             bytes: the producer gets its own earlier answer there, as upstream's driver
//             gives it, and no recorded call carries an answer of the baseline.
//     check:  Stub::call checks the arguments equal the recorded ones, then answers with the
//             outputs the candidate produced (results.<rank>.bin), and validate() compares
//             them with the baseline exactly as upstream's driver does. Rank 0 prints
//             "PE_VERDICT PASS|FAIL".
//   producer = the candidate compiled as upstream compiles it, with producer_main: it reads
//              calls.<rank>.bin, calls the candidate on each recorded argument list and writes
//              the outputs (non-const reference parameters and the return value) to
//              results.<rank>.bin; earlier.<rank>.bin holds its answers to the calls before
//              (for references). Its output is data only; it decides nothing. The scorer runs
//              it once per call, showing call k only after the answer to call k-1 is out of
//              its reach, so no later call's inputs can help it answer an earlier one.
// Files are sequences of records: a little-endian u64 byte count, then the bytes. A call
// record holds one entry per parameter: a tag byte, then the value (tag 0) or the index of
// the earlier call (u64, tag 1) whose answer the output parameter holds. Everything read
// from results.* is untrusted and bounds-checked.
#pragma once
#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <unistd.h>
#include <utility>
#include <vector>
#if defined(USE_MPI) || defined(USE_MPI_OMP)
#include <mpi.h>
#define PE_TRUSTED_MPI 1
#endif
#if defined(_OPENMP)
#include <omp.h>
#endif

namespace pe_trusted {

struct Writer {
    std::string buf;
    void raw(const void *p, size_t n) { buf.append(static_cast<const char *>(p), n); }
};

struct Reader {
    const char *p;
    size_t n;
    size_t at = 0;
    bool ok = true;
    bool raw(void *out, size_t k) {
        if (!ok || n - at < k) return ok = false;
        std::memcpy(out, p + at, k);
        at += k;
        return true;
    }
    size_t left() const { return n - at; }
};

template <class T> struct is_vector : std::false_type {};
template <class T, class A> struct is_vector<std::vector<T, A>> : std::true_type {};
template <class T> struct is_array : std::false_type {};
template <class T, size_t N> struct is_array<std::array<T, N>> : std::true_type {};
template <class T> struct is_complex : std::false_type {};
template <class T> struct is_complex<std::complex<T>> : std::true_type {};
template <class T> struct is_pair : std::false_type {};
template <class A, class B> struct is_pair<std::pair<A, B>> : std::true_type {};
template <class T> inline constexpr bool unsupported = false;

// Field count of an aggregate (how many initializers T{...} accepts), for structs the prompts
// define (Point, Book, COOElement, ...); their fields are then visited by structured binding.
struct AnyField {
    template <class T> constexpr operator T &() const && noexcept;
};
template <class T, class... A>
constexpr auto brace_ok(int) -> decltype(T{std::declval<A>()...}, true) { return true; }
template <class T, class... A> constexpr bool brace_ok(...) { return false; }
template <class T> constexpr int field_count() {
    using F = AnyField;
    if constexpr (brace_ok<T, F, F, F, F, F, F>(0)) return 6;
    else if constexpr (brace_ok<T, F, F, F, F, F>(0)) return 5;
    else if constexpr (brace_ok<T, F, F, F, F>(0)) return 4;
    else if constexpr (brace_ok<T, F, F, F>(0)) return 3;
    else if constexpr (brace_ok<T, F, F>(0)) return 2;
    else if constexpr (brace_ok<T, F>(0)) return 1;
    else return 0;
}
template <class T, class Fn> void for_fields(T &v, Fn &&f) {
    constexpr int n = field_count<std::remove_cv_t<T>>();
    if constexpr (n == 1) { auto &[a] = v; f(a); }
    else if constexpr (n == 2) { auto &[a, b] = v; f(a); f(b); }
    else if constexpr (n == 3) { auto &[a, b, c] = v; f(a); f(b); f(c); }
    else if constexpr (n == 4) { auto &[a, b, c, d] = v; f(a); f(b); f(c); f(d); }
    else if constexpr (n == 5) { auto &[a, b, c, d, e] = v; f(a); f(b); f(c); f(d); f(e); }
    else if constexpr (n == 6) { auto &[a, b, c, d, e, g] = v; f(a); f(b); f(c); f(d); f(e); f(g); }
    else static_assert(unsupported<T>, "pe_trusted: aggregate with no or too many fields");
}

template <class T> void put(Writer &w, const T &v) {
    if constexpr (std::is_same_v<T, bool>) {
        const uint8_t b = v ? 1 : 0;
        w.raw(&b, 1);
    } else if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
        w.raw(&v, sizeof v);
    } else if constexpr (is_complex<T>::value) {
        put(w, v.real());
        put(w, v.imag());
    } else if constexpr (std::is_same_v<T, std::string>) {
        put(w, static_cast<uint64_t>(v.size()));
        w.raw(v.data(), v.size());
    } else if constexpr (is_vector<T>::value) {
        put(w, static_cast<uint64_t>(v.size()));
        for (const auto &e : v) put(w, static_cast<const typename T::value_type &>(e));
    } else if constexpr (is_array<T>::value) {
        for (const auto &e : v) put(w, e);
    } else if constexpr (is_pair<T>::value) {
        put(w, v.first);
        put(w, v.second);
    } else if constexpr (std::is_aggregate_v<T>) {
        for_fields(v, [&](const auto &f) { put(w, f); });
    } else {
        static_assert(unsupported<T>, "pe_trusted: cannot serialize this parameter type");
    }
}

template <class T> void get(Reader &r, T &v) {
    if constexpr (std::is_same_v<T, bool>) {
        uint8_t b = 0;
        r.raw(&b, 1);
        v = b != 0;
    } else if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
        r.raw(&v, sizeof v);
    } else if constexpr (is_complex<T>::value) {
        typename T::value_type re{}, im{};
        get(r, re);
        get(r, im);
        v = T(re, im);
    } else if constexpr (std::is_same_v<T, std::string>) {
        uint64_t n = 0;
        if (!r.raw(&n, sizeof n) || n > r.left()) { r.ok = false; return; }
        v.assign(r.p + r.at, n);
        r.at += n;
    } else if constexpr (is_vector<T>::value) {
        uint64_t n = 0;
        // Every element takes at least one byte: a count beyond the bytes left is a lie.
        if (!r.raw(&n, sizeof n) || n > r.left()) { r.ok = false; return; }
        v.clear();
        v.reserve(n);
        for (uint64_t i = 0; i < n && r.ok; ++i) {
            typename T::value_type e{};
            get(r, e);
            v.push_back(std::move(e));
        }
    } else if constexpr (is_array<T>::value) {
        for (auto &e : v) get(r, e);
    } else if constexpr (is_pair<T>::value) {
        get(r, v.first);
        get(r, v.second);
    } else if constexpr (std::is_aggregate_v<T>) {
        for_fields(v, [&](auto &f) { get(r, f); });
    } else {
        static_assert(unsupported<T>, "pe_trusted: cannot deserialize this parameter type");
    }
}

// A parameter the function may write: a non-const lvalue reference.
template <class P>
inline constexpr bool is_output =
    std::is_lvalue_reference_v<P> && !std::is_const_v<std::remove_reference_t<P>>;

inline int rank() {
#if defined(PE_TRUSTED_MPI)
    int r = 0, inited = 0;
    MPI_Initialized(&inited);
    if (inited) MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
#else
    return 0;
#endif
}

inline std::string path_for(const char *stem) { return std::string(stem) + "." + std::to_string(rank()) + ".bin"; }

inline std::vector<std::string> read_records(const std::string &path, bool &ok) {
    std::vector<std::string> out;
    std::string data;
    ok = true;
    if (FILE *f = std::fopen(path.c_str(), "rb")) {
        char chunk[1 << 16];
        size_t got;
        while ((got = std::fread(chunk, 1, sizeof chunk, f)) > 0) data.append(chunk, got);
        std::fclose(f);
    } else {
        ok = false;
        return out;
    }
    Reader r{data.data(), data.size()};
    while (r.left() > 0) {
        uint64_t n = 0;
        if (!r.raw(&n, sizeof n) || n > r.left()) { ok = false; break; }
        out.emplace_back(r.p + r.at, n);
        r.at += n;
    }
    return out;
}

inline bool write_records(const std::string &path, const std::vector<std::string> &records) {
    FILE *f = std::fopen(path.c_str(), "wb");
    if (!f) return false;
    for (const auto &rec : records) {
        const uint64_t n = rec.size();
        std::fwrite(&n, sizeof n, 1, f);
        std::fwrite(rec.data(), 1, rec.size(), f);
    }
    return std::fclose(f) == 0;
}

// ------------------------------------------------------------------------------- checker
struct Session {
    enum Mode { NONE, RECORD, CHECK } mode = NONE;
    std::vector<std::string> calls, results;
    std::vector<std::vector<std::string>> answers;  // record: each call's outputs, per parameter
    size_t next = 0;
    bool nonfinite = false;  // rank 0 answered NaN/Inf where the baseline's value is finite
};
inline Session &session() {
    static Session s;
    return s;
}

[[noreturn]] inline void die(const char *marker, const char *why) {
    std::printf("%s rank %d: %s\n", marker, rank(), why);
    std::fflush(stdout);
    _exit(3);
}

// Whether each floating-point value in v is finite, in a fixed order (the order of put()).
template <class T> void finite_flags(const T &v, std::vector<uint8_t> &out) {
    if constexpr (std::is_floating_point_v<T>) {
        out.push_back(std::isfinite(v) ? 1 : 0);
    } else if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T> || std::is_same_v<T, std::string>) {
        // no floating-point values
    } else if constexpr (is_complex<T>::value) {
        finite_flags(v.real(), out);
        finite_flags(v.imag(), out);
    } else if constexpr (is_vector<T>::value || is_array<T>::value) {
        for (const auto &e : v) finite_flags(static_cast<const typename T::value_type &>(e), out);
    } else if constexpr (is_pair<T>::value) {
        finite_flags(v.first, out);
        finite_flags(v.second, out);
    } else if constexpr (std::is_aggregate_v<T>) {
        for_fields(v, [&](const auto &f) { finite_flags(f, out); });
    }
}

// Upstream's validate() compares with `std::abs(a - b) > eps` (or fequal), which is false for
// NaN, so an answer of NaN passed every floating-point problem. A value the candidate returns
// NaN or Inf where the baseline's value (same call, same position) is finite is wrong.
inline bool nonfinite_where_finite(const std::vector<uint8_t> &got, const std::vector<uint8_t> &want) {
    for (size_t i = 0; i < got.size(); ++i)
        if (!got[i] && (i >= want.size() || want[i])) return true;
    return false;
}

enum : uint8_t { PARAM_VALUE = 0, PARAM_EARLIER = 1 };

template <class V> std::string bytes_of(const V &v) {
    Writer w;
    put(w, v);
    return w.buf;
}

// A recorded parameter: an output parameter whose incoming content equals the baseline's
// answer for it in an earlier call (the latest such) is recorded as that call's index, so the
// recording never carries an answer the checker will compare with.
template <class P, class V>
void record_param(Writer &w, const std::vector<std::vector<std::string>> &answers, size_t i, const V &v) {
    std::string value = bytes_of(v);
    if constexpr (is_output<P>) {
        for (size_t m = answers.size(); m-- > 0;) {
            if (answers[m][i] != value) continue;
            const uint8_t tag = PARAM_EARLIER;
            const uint64_t call = m;
            w.raw(&tag, 1);
            w.raw(&call, sizeof call);
            return;
        }
    }
    const uint8_t tag = PARAM_VALUE;
    w.raw(&tag, 1);
    w.buf += value;
}

template <class P, class V> std::string output_bytes(const V &v) {
    if constexpr (is_output<P>) return bytes_of(v);
    else return {};
}

// Reads a recorded parameter; an earlier-call reference (outputs only) sets `earlier`.
template <class P, class V> void get_param(Reader &r, V &v, uint64_t &earlier) {
    uint8_t tag = 0xff;
    r.raw(&tag, 1);
    earlier = UINT64_MAX;
    if (tag == PARAM_VALUE) get(r, v);
    else if (tag == PARAM_EARLIER && is_output<P>) r.raw(&earlier, sizeof earlier);
    else r.ok = false;
}

template <class P, class V> void put_input(Writer &w, const V &v) {
    if constexpr (!is_output<P>) put(w, v);
}
template <class P, class V> void output_flags(const V &v, std::vector<uint8_t> &out) {
    if constexpr (is_output<P>) finite_flags(v, out);
}

template <class F> struct Stub;
template <class R, class... A> struct Stub<R (*)(A...)> {
    template <class P, class V> static void read_output(Reader &r, V &v) {
        if constexpr (is_output<P>) get(r, v);
    }
    // The arguments the candidate cannot write (inputs: by value or const) of a recorded call.
    // Output parameters are left out of the comparison: validate() may reuse an output vector
    // across trials (04_dense_la_gemv's `test`), so its incoming content is the previous
    // answer, the baseline's when recording and the candidate's when checking; comparing it
    // turned an honest answer with other rounding into a "diverged" error.
    template <size_t... I> static std::string recorded_inputs(const std::string &rec, std::index_sequence<I...>) {
        std::tuple<std::decay_t<A>...> t;
        Reader r{rec.data(), rec.size()};
        uint64_t earlier = 0;
        (get_param<std::tuple_element_t<I, std::tuple<A...>>>(r, std::get<I>(t), earlier), ...);
        if (!r.ok || r.left()) die("PE_PROTOCOL", "malformed call record");
        Writer w;
        (put_input<std::tuple_element_t<I, std::tuple<A...>>>(w, std::get<I>(t)), ...);
        return w.buf;
    }
    template <class Tuple, class Refs, size_t... I>
    static void flags(const Tuple &expect, const Refs &got, std::vector<uint8_t> &want,
                      std::vector<uint8_t> &have, std::index_sequence<I...>) {
        (output_flags<std::tuple_element_t<I, std::tuple<A...>>>(std::get<I>(expect), want), ...);
        (output_flags<std::tuple_element_t<I, std::tuple<A...>>>(std::get<I>(got), have), ...);
    }
    template <class Baseline> static R call(Baseline baseline, A... args) {
        Session &s = session();
        if (s.mode == Session::RECORD) {
            Writer w;
            size_t i = 0;
            (record_param<A>(w, s.answers, i++, static_cast<const std::decay_t<A> &>(args)), ...);
            s.calls.push_back(std::move(w.buf));
            if constexpr (std::is_void_v<R>) {
                baseline(args...);
                s.answers.push_back({output_bytes<A>(static_cast<const std::decay_t<A> &>(args))...});
                return;
            } else {
                R ret = baseline(args...);
                s.answers.push_back({output_bytes<A>(static_cast<const std::decay_t<A> &>(args))...});
                return ret;
            }
        }
        if (s.mode != Session::CHECK) die("PE_PROTOCOL", "checker session not started");
        Writer key;
        (put_input<A>(key, static_cast<const std::decay_t<A> &>(args)), ...);
        if (s.next >= s.calls.size() || recorded_inputs(s.calls[s.next], std::index_sequence_for<A...>{}) != key.buf) {
            // Before any answer of the candidate was used, the driver is not replaying
            // (nondeterministic input): no verdict. After, the candidate's answers steered
            // validate() off the recorded path, and its answers decide that: wrong.
            if (s.next == 0) die("PE_DIVERGED", "the driver asked for a call that was not recorded");
            die("PE_STEERED", "validate() made a call that was not recorded after using the candidate's answers");
        }
        if (s.next >= s.results.size()) die("PE_BAD_RESULTS", "fewer results than calls");
        // The baseline's answer to the same call, for the non-finite check.
        std::tuple<std::decay_t<A>...> expect(static_cast<const std::decay_t<A> &>(args)...);
        const std::string &res = s.results[s.next++];
        Reader r{res.data(), res.size()};
        (read_output<A>(r, args), ...);
        std::vector<uint8_t> want, have;
        auto got = std::tie(args...);
        if constexpr (std::is_void_v<R>) {
            std::apply([&](auto &...a) { baseline(a...); }, expect);
            if (!r.ok || r.left()) die("PE_BAD_RESULTS", "malformed result record");
            flags(expect, got, want, have, std::index_sequence_for<A...>{});
            if (rank() == 0 && nonfinite_where_finite(have, want)) s.nonfinite = true;
        } else {
            const std::decay_t<R> ret_want = std::apply([&](auto &...a) { return baseline(a...); }, expect);
            std::decay_t<R> ret{};
            get(r, ret);
            if (!r.ok || r.left()) die("PE_BAD_RESULTS", "malformed result record");
            flags(expect, got, want, have, std::index_sequence_for<A...>{});
            finite_flags(ret_want, want);
            finite_flags(ret, have);
            if (rank() == 0 && nonfinite_where_finite(have, want)) s.nonfinite = true;
            return ret;
        }
    }
};

// The checker's main: ParEval's init() and validate() with the stub in place of the candidate.
template <class Ctx>
int checker_main(int argc, char **argv, Ctx *(*init)(), bool (*validate)(Ctx *), void (*destroy)(Ctx *)) {
#if defined(PE_TRUSTED_MPI)
    MPI_Init(&argc, &argv);
#endif
    Session &s = session();
    const std::string mode = argc > 1 ? argv[1] : "";
    bool ok = true;
    if (mode == "check") {
        s.calls = read_records(path_for("calls"), ok);
        if (!ok) die("PE_PROTOCOL", "cannot read the recorded calls");
        s.results = read_records(path_for("results"), ok);
        if (!ok) die("PE_BAD_RESULTS", "missing or malformed results file");
        s.mode = Session::CHECK;
    } else if (mode == "record") {
        s.mode = Session::RECORD;
    } else {
        die("PE_PROTOCOL", "usage: checker record|check");
    }
    Ctx *ctx = init();
    bool valid = validate(ctx);
    if (s.mode == Session::CHECK && valid && s.next != s.calls.size())
        die(s.next == 0 ? "PE_DIVERGED" : "PE_STEERED", "validate() passed without making every recorded call");
    if (s.nonfinite) {
        std::printf("PE_NONFINITE rank 0: an answer holds NaN or Inf where the baseline's is finite\n");
        valid = false;
    }
    if (s.mode == Session::RECORD && !write_records(path_for("calls"), s.calls))
        die("PE_PROTOCOL", "cannot write the calls file");
    if (rank() == 0) {
        std::printf("PE_VERDICT %s %zu\n", valid ? "PASS" : "FAIL", s.mode == Session::RECORD ? s.calls.size() : s.next);
        std::fflush(stdout);
    }
    destroy(ctx);
#if defined(PE_TRUSTED_MPI)
    MPI_Finalize();
#endif
    return 0;
}

// ------------------------------------------------------------------------------ producer
template <class F> struct Producer;
template <class R, class... A> struct Producer<R (*)(A...)> {
    using Args = std::tuple<std::decay_t<A>...>;
    template <size_t K> using Param = std::tuple_element_t<K, std::tuple<A...>>;

    // The output parameters of one of our earlier answers (its results record: the outputs in
    // parameter order, then the return value, which is not needed here).
    template <size_t... I> static bool earlier_outputs(const std::string &rec, Args &out, std::index_sequence<I...>) {
        Reader r{rec.data(), rec.size()};
        auto one = [&](auto index) {
            constexpr size_t k = decltype(index)::value;
            if constexpr (is_output<Param<k>>) get(r, std::get<k>(out));
        };
        (one(std::integral_constant<size_t, I>{}), ...);
        return r.ok;
    }

    // The arguments of a recorded call; an output parameter recorded as an earlier call's
    // answer gets our own answer to that call (what upstream's driver passes in a reused
    // vector).
    template <size_t... I>
    static bool arguments(const std::string &call, const std::vector<std::string> &own, Args &args, std::index_sequence<I...> seq) {
        Reader r{call.data(), call.size()};
        bool ok = true;
        auto one = [&](auto index) {
            constexpr size_t k = decltype(index)::value;
            uint64_t earlier = UINT64_MAX;
            get_param<Param<k>>(r, std::get<k>(args), earlier);
            if (earlier == UINT64_MAX) return;
            Args prev{};
            if (earlier >= own.size() || !earlier_outputs(own[earlier], prev, seq)) ok = false;
            else std::get<k>(args) = std::move(std::get<k>(prev));
        };
        (one(std::integral_constant<size_t, I>{}), ...);
        return ok && r.ok && r.left() == 0;
    }

    template <size_t... I>
    static std::string answer(R (*f)(A...), const std::string &call, const std::vector<std::string> &own, bool &ok,
                              std::index_sequence<I...> seq) {
        Args args;
        ok = arguments(call, own, args, seq);
        Writer w;
        if (!ok) return w.buf;
        auto put_output = [&](auto index) {
            constexpr size_t k = decltype(index)::value;
            if constexpr (is_output<Param<k>>) put(w, std::get<k>(args));
        };
        if constexpr (std::is_void_v<R>) {
            f(std::get<I>(args)...);
            (put_output(std::integral_constant<size_t, I>{}), ...);
        } else {
            std::decay_t<R> ret = f(std::get<I>(args)...);
            (put_output(std::integral_constant<size_t, I>{}), ...);
            put(w, ret);
        }
        return w.buf;
    }
};

template <class R, class... A> int producer_main(R (*f)(A...), int argc, char **argv) {
#if defined(PE_TRUSTED_MPI)
    MPI_Init(&argc, &argv);
#endif
#if defined(_OPENMP)
    if (argc > 1) omp_set_num_threads(std::atoi(argv[1]));
#endif
    bool ok = true;
    const auto calls = read_records(path_for("calls"), ok);
    if (!ok) {
        std::fprintf(stderr, "producer: cannot read %s\n", path_for("calls").c_str());
        return 5;
    }
    // Our answers to the calls before these (absent for the first call).
    auto own = read_records(path_for("earlier"), ok);
    if (!ok) own.clear();
    std::vector<std::string> results;
    for (const auto &call : calls) {
        results.push_back(Producer<R (*)(A...)>::answer(f, call, own, ok, std::index_sequence_for<A...>{}));
        if (!ok) {
            std::fprintf(stderr, "producer: malformed call record\n");
            return 5;
        }
        own.push_back(results.back());
    }
    if (!write_records(path_for("results"), results)) return 6;
#if defined(PE_TRUSTED_MPI)
    MPI_Finalize();
#endif
    return 0;
}

}  // namespace pe_trusted
