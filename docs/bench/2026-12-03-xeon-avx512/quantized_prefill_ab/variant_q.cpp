// compiled twice: -DNS=attn_old with the old include dir, -DNS=attn_new with the new one
#define attn NS
#include <attn/detail/kernels/quantized_weights.hpp>
#include <vector>
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
namespace d = NS::detail;
using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
struct CAT(State_, NS) {
    std::vector<d::QuantizedMatrix> pool;
    RowMajor a, c;
    long next = 0, depth = 0, cols = 0;
};
void* CAT(make_, NS)(int fmt, long rows, long depth, long cols, long pool_mib) {
    auto* s = new CAT(State_, NS);
    const auto format = d::QuantFormat(fmt);
    const long width = d::quant_block_bytes(format), values = d::quant_block_values(format);
    const long bytes = cols * depth / values * width;
    long copies = std::max(1L, (pool_mib << 20) / bytes);
    std::uint32_t state = 12345;
    auto next = [&state] {
        state = state * 1664525u + 1013904223u;
        return state >> 8;
    };
    for (long i = 0; i < copies; ++i) {
        d::QuantizedMatrix m = d::QuantizedMatrix::sized(depth, {{format, cols}});
        for (auto& b : m.bytes) b = std::uint8_t(next());
        for (std::size_t at = 0; at < m.bytes.size(); at += std::size_t(width)) {
            std::uint8_t* block = m.bytes.data() + at;
            auto half = [&](std::uint8_t* p) {
                const std::uint32_t bits = (next() & 1u) << 15 | (3 + next() % 3) << 10 | (next() & 0x3FFu);
                p[0] = std::uint8_t(bits & 0xFF);
                p[1] = std::uint8_t(bits >> 8);
            };
            if (format == d::QuantFormat::q6_k)
                half(block + 208);
            else {
                half(block);
                if (d::has_min(format)) half(block + 2);
            }
        }
        s->pool.push_back(std::move(m));
    }
    std::srand(3);
    s->a = RowMajor::Random(rows, depth);
    s->c = RowMajor::Zero(rows, cols);
    s->depth = depth;
    s->cols = cols;
    return s;
}
double CAT(run_, NS)(void* p) {
    auto* s = static_cast<CAT(State_, NS)*>(p);
    d::multiply_quantized(s->a.rows(), s->depth, s->a.data(), s->depth, s->pool[s->next], 0, s->cols, 0, s->c.data(),
                          s->cols, false);
    s->next = (s->next + 1) % long(s->pool.size());
    double sum = 0;
    for (long i = 0; i < s->c.size(); ++i) sum += s->c.data()[i];
    return sum;
}
void CAT(free_, NS)(void* p) {
    delete static_cast<CAT(State_, NS)*>(p);
}
