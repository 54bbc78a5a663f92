// compiled twice: -DNS=attn_old with the old include dir, -DNS=attn_new with the new one
#define attn NS
#include <attn/detail/kernels/weight_panels.hpp>
#include <vector>
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
namespace d = NS::detail;
using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
struct CAT(State_, NS) {
    std::vector<d::PanelMatrix<float>> pool;
    RowMajor a, c;
    long next = 0;
};
void* CAT(make_, NS)(long rows, long depth, long cols, long pool_mib) {
    auto* s = new CAT(State_, NS);
    long copies = std::max(1L, (pool_mib << 20) / (depth * cols * 4));
    std::srand(3);
    RowMajor w = RowMajor::Random(depth, cols);
    for (long i = 0; i < copies; ++i) s->pool.push_back(d::PanelMatrix<float>::packed(w));
    s->a = RowMajor::Random(rows, depth);
    s->c = RowMajor::Zero(rows, cols);
    return s;
}
double CAT(run_, NS)(void* p) {
    auto* s = static_cast<CAT(State_, NS)*>(p);
    d::multiply_rows(s->a, d::WeightRows<float>::of(s->pool[s->next]), s->c, false);
    s->next = (s->next + 1) % long(s->pool.size());
    return double(s->c(0, 0));
}
void CAT(free_, NS)(void* p) {
    delete static_cast<CAT(State_, NS)*>(p);
}
