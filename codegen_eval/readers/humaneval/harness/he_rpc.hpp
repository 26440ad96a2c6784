// C++ values over the HumanEval RPC (he_core.h): a codec per type, the checker's call stub
// and the candidate's server loop. A type without a codec stops the checker's build with a
// static_assert, and the scorer then falls back to the in-process mode for that problem.
#ifndef HE_RPC_HPP
#define HE_RPC_HPP
#include "he_core.h"

#include <array>
#include <cstring>
#include <deque>
#include <exception>
#include <list>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace he_rpc {

template <class T, class Enable = void>
struct codec {
    static_assert(sizeof(T) == 0, "he_rpc: this type cannot cross the HumanEval RPC");
};

template <class T>
void put(he_buf &b, const T &v) { codec<T>::put(b, v); }
template <class T>
void get(he_rd &r, T &v) { codec<T>::get(r, v); }

template <class T>
struct codec<T, std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, bool>>> {
    static void put(he_buf &b, T v) { he_put_raw(&b, &v, sizeof v); }
    static void get(he_rd &r, T &v) {
        he_get_raw(&r, &v, sizeof v);
#ifdef HE_TRUSTED  // the checker decodes answers only: a NaN in one is wrong (he_core.h)
        if constexpr (std::is_floating_point_v<T>) HE_CHECK_NAN(v);
#endif
    }
};
template <>
struct codec<bool> {
    static void put(he_buf &b, bool v) { he_put_bool(&b, v); }
    static void get(he_rd &r, bool &v) { v = he_get_bool(&r) != 0; }
};
template <>
struct codec<std::string> {
    static void put(he_buf &b, const std::string &v) { he_put_str(&b, v.data(), v.size()); }
    static void get(he_rd &r, std::string &v) {
        size_t n = he_get_count(&r);
        v.assign(n, '\0');
        he_get_raw(&r, v.data(), n);
    }
};

// sequences that keep their order: a count, then the elements
template <class C>
struct seq_codec {
    static void put(he_buf &b, const C &v) {
        he_put_u64(&b, (uint64_t)v.size());
        for (const auto &x : v) he_rpc::put<typename C::value_type>(b, x);
    }
    static void get(he_rd &r, C &v) {
        v.clear();
        for (size_t i = 0, n = he_get_count(&r); i < n && !r.bad; i++) {
            typename C::value_type x{};
            he_rpc::get(r, x);
            v.insert(v.end(), std::move(x));
        }
    }
};
template <class T, class A>
struct codec<std::vector<T, A>> : seq_codec<std::vector<T, A>> {};
template <class A>  // vector<bool> yields proxies, not bool&
struct codec<std::vector<bool, A>> {
    static void put(he_buf &b, const std::vector<bool, A> &v) {
        he_put_u64(&b, (uint64_t)v.size());
        for (bool x : v) he_put_bool(&b, x);
    }
    static void get(he_rd &r, std::vector<bool, A> &v) {
        v.clear();
        for (size_t i = 0, n = he_get_count(&r); i < n && !r.bad; i++) v.push_back(he_get_bool(&r));
    }
};
template <class T, class A>
struct codec<std::list<T, A>> : seq_codec<std::list<T, A>> {};
template <class T, class A>
struct codec<std::deque<T, A>> : seq_codec<std::deque<T, A>> {};
template <class T, class Cmp, class A>
struct codec<std::set<T, Cmp, A>> : seq_codec<std::set<T, Cmp, A>> {};
template <class T, class Cmp, class A>
struct codec<std::multiset<T, Cmp, A>> : seq_codec<std::multiset<T, Cmp, A>> {};
template <class T, class H, class E, class A>
struct codec<std::unordered_set<T, H, E, A>> : seq_codec<std::unordered_set<T, H, E, A>> {};

// maps: a count, then key and value of each entry
template <class M>
struct map_codec {
    static void put(he_buf &b, const M &v) {
        he_put_u64(&b, (uint64_t)v.size());
        for (const auto &kv : v) {
            he_rpc::put<typename M::key_type>(b, kv.first);
            he_rpc::put<typename M::mapped_type>(b, kv.second);
        }
    }
    static void get(he_rd &r, M &v) {
        v.clear();
        for (size_t i = 0, n = he_get_count(&r); i < n && !r.bad; i++) {
            typename M::key_type k{};
            typename M::mapped_type x{};
            he_rpc::get(r, k);
            he_rpc::get(r, x);
            v.insert(v.end(), {std::move(k), std::move(x)});
        }
    }
};
template <class K, class V, class Cmp, class A>
struct codec<std::map<K, V, Cmp, A>> : map_codec<std::map<K, V, Cmp, A>> {};
template <class K, class V, class Cmp, class A>
struct codec<std::multimap<K, V, Cmp, A>> : map_codec<std::multimap<K, V, Cmp, A>> {};
template <class K, class V, class H, class E, class A>
struct codec<std::unordered_map<K, V, H, E, A>> : map_codec<std::unordered_map<K, V, H, E, A>> {};

template <class A, class B>
struct codec<std::pair<A, B>> {
    static void put(he_buf &b, const std::pair<A, B> &v) {
        he_rpc::put<A>(b, v.first);
        he_rpc::put<B>(b, v.second);
    }
    static void get(he_rd &r, std::pair<A, B> &v) {
        he_rpc::get(r, v.first);
        he_rpc::get(r, v.second);
    }
};
template <class... T>
struct codec<std::tuple<T...>> {
    static void put(he_buf &b, const std::tuple<T...> &v) {
        std::apply([&b](const auto &...x) { (he_rpc::put(b, x), ...); }, v);
    }
    static void get(he_rd &r, std::tuple<T...> &v) {
        std::apply([&r](auto &...x) { (he_rpc::get(r, x), ...); }, v);
    }
};
template <class T, size_t N>
struct codec<std::array<T, N>> {
    static void put(he_buf &b, const std::array<T, N> &v) {
        for (const auto &x : v) he_rpc::put<T>(b, x);
    }
    static void get(he_rd &r, std::array<T, N> &v) {
        for (auto &x : v) he_rpc::get(r, x);
    }
};

#ifdef HE_TRUSTED
// The stub the checker's entry point returns through: arguments out, the answer back.
template <class R, class... A>
R call(const A &...args) {
    he_buf b{nullptr, 0, 0};
    (he_rpc::put<std::decay_t<A>>(b, args), ...);
    he_rd r = he_call(&b);
    if constexpr (std::is_void_v<R>) {
        he_end(&r);
    } else {
        std::decay_t<R> out{};
        he_rpc::get(r, out);
        he_end(&r);
        return out;
    }
}
#endif

#ifdef HE_CANDIDATE
// The candidate's main: decode each call's arguments into a tuple, call, answer.
template <class R, class... A, class F>
int serve(F f) {
    he_serve_ready();
    he_rd in{nullptr, 0, 0, 0};
    while (he_serve_next(&in)) {
        std::tuple<std::decay_t<A>...> args{};
        std::apply([&in](auto &...x) { (he_rpc::get(in, x), ...); }, args);
        he_rd_free(&in);
        he_buf out{nullptr, 0, 0};
        try {
            if constexpr (std::is_void_v<R>) {
                std::apply(f, args);
            } else {
                he_rpc::put<std::decay_t<R>>(out, std::apply(f, args));
            }
        } catch (const std::exception &e) {
            he_reply_error(e.what());
            continue;
        } catch (...) {
            he_reply_error("a non-standard exception");
            continue;
        }
        he_reply(&out);
    }
    return 0;
}
#endif

}  // namespace he_rpc
#endif
