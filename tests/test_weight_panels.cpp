// Weights of float and double packed in panels (detail/kernels/weight_panels.hpp): the numbers
// packed and unpacked again, and every product on a block of them (one and two rows streamed panel
// by panel; the tiles, reading whole panel rows where they lie and copying other blocks) with the
// bits of the same product on the row-major matrix, near a double reference written here.
#include <doctest/doctest.h>
#include <attn/detail/kernels/weight_panels.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "support.hpp"

using attn::test::same_bits;

using attn::Index;
using attn::detail::PanelMatrix;
using attn::detail::WeightRows;

TEST_CASE_TEMPLATE("weight panels: a matrix packed holds its numbers panel by panel, and unpacks to them", T, float,
                   double) {
    constexpr Index kPanel = PanelMatrix<T>::kPanel;
    for (Index cols : {Index(1), kPanel - 1, kPanel, kPanel + 1, 3 * kPanel + 17}) {
        CAPTURE(cols);
        const attn::Matrix<T> m = attn::test::random_matrix<T>(11, cols, unsigned(cols));
        const PanelMatrix<T> packed = PanelMatrix<T>::packed(m);
        REQUIRE(packed.stored.size() == std::size_t(m.size()));
        for (Index r = 0; r < m.rows(); ++r)
            for (Index c = 0; c < cols; ++c) REQUIRE(*packed.at(r, c) == m(r, c));
        // panel p: its rows one after another, panel_width apart, then panel p + 1
        CHECK(packed.at(1, 0) == packed.at(0, 0) + std::min(kPanel, cols));
        if (cols > kPanel) CHECK(packed.at(0, kPanel) == packed.at(m.rows() - 1, kPanel - 1) + 1);
        CHECK(same_bits(packed.unpacked(), m));
        CHECK(same_bits(attn::detail::unpacked(WeightRows<T>::of(packed)), m));
        // a block, as layer accessors and a column of U read it
        CHECK(same_bits(attn::detail::unpacked(WeightRows<T>::of(packed).middleCols(cols / 2, cols - cols / 2)),
                        m.middleCols(cols / 2, cols - cols / 2)));
        CHECK(same_bits(attn::detail::unpacked(WeightRows<T>::of(packed).middleRows(3, 5)), m.middleRows(3, 5)));
    }
}

TEST_CASE("weight panels: every panel starts on a cache line, large and small, float and 16-bit") {
    // std::allocator's large blocks start 16 bytes past a line: every 64-byte load of a panel row
    // would span two lines (the reason for detail::kArrayAlignment)
    const auto on_a_line = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 64 == 0; };
    for (const auto& [rows, cols] : {std::pair<Index, Index>{768, 2304}, {3, 70}, {1, 1}}) {
        const auto floats = attn::detail::PanelMatrix<float>::sized(rows, cols);
        const auto halves = attn::detail::PanelMatrix<std::uint16_t>::sized(rows, cols);
        for (Index c = 0; c < cols; c += attn::detail::PanelMatrix<float>::kPanel) {
            CHECK(on_a_line(floats.at(0, c)));
            CHECK(on_a_line(halves.at(0, c)));
        }
    }
    std::vector<double, attn::detail::LargeArrayAllocator<double>> small(5), large(std::size_t(1) << 20);
    CHECK(on_a_line(small.data()));
    CHECK(reinterpret_cast<std::uintptr_t>(large.data()) % attn::detail::kHugePageBytes == 0);
}

TEST_CASE_TEMPLATE("weight panels: every product on a block of panels has the bits of the row-major product", T, float,
                   double) {
    const Index lanes = attn::detail::RegisterTile<T>::kLanes;
    const Index panel = PanelMatrix<T>::kPanel;
    // rows: streamed (1, 2) and tiled (3 … 50; 400: a's rows copied tile by tile, as for 256 rows);
    // the block's first column: a panel's first (whole panel rows, read in place by tiles as wide
    // as a panel), a packet's inside a panel, and one inside a packet (packets straddle the edges)
    for (Index rows : {Index(1), Index(2), Index(3), Index(7), Index(50), Index(400)})
        for (Index depth : {Index(0), Index(1), Index(19), Index(300)})
            for (Index cols : {Index(1), lanes + 3, panel, 2 * panel, Index(200)})
                for (Index offset : {Index(0), panel - lanes, Index(3)}) {
                    if (rows == 400 && (depth != 300 || cols != 2 * panel)) continue;  // one large case
                    CAPTURE(rows);
                    CAPTURE(depth);
                    CAPTURE(cols);
                    CAPTURE(offset);
                    const unsigned seed = unsigned(rows * 1000003 + depth * 1009 + cols + offset * 7);
                    const attn::Matrix<T> a = attn::test::random_matrix<T>(rows, depth, seed);
                    const attn::Matrix<T> m = attn::test::random_matrix<T>(depth, offset + cols + 7, seed + 1);
                    const PanelMatrix<T> packed = PanelMatrix<T>::packed(m);
                    const auto block = WeightRows<T>::of(packed).middleCols(offset, cols);
                    // (with no depth there is no storage to offset into: Eigen's block starts at 0)
                    const auto row_major = m.middleCols(depth == 0 ? 0 : offset, cols);
                    for (bool accumulate : {false, true}) {
                        CAPTURE(accumulate);
                        const attn::Matrix<T> start = attn::test::random_matrix<T>(rows, cols, seed + 2);
                        attn::Matrix<T> from_panels = start, from_rows = start;
                        attn::detail::multiply_rows(a, block, from_panels, accumulate);
                        attn::detail::multiply_rows(a, row_major, from_rows, accumulate);
                        REQUIRE(same_bits(from_panels, from_rows));
                        // and what it is: a · m in double, summed here
                        double worst = 0.0;
                        for (Index r = 0; r < rows; ++r)
                            for (Index c = 0; c < cols; ++c) {
                                double sum = accumulate ? double(start(r, c)) : 0.0, scale = std::abs(sum);
                                for (Index t = 0; t < depth; ++t) {
                                    const double term = double(a(r, t)) * double(m(t, offset + c));
                                    sum += term;
                                    scale += std::abs(term);
                                }
                                worst = std::max(worst, std::abs(double(from_panels(r, c)) - sum) / (scale + 1e-300));
                            }
                        CHECK(worst < (sizeof(T) == 4 ? 1e-5 : 1e-13));
                    }
                }
}

TEST_CASE("weight panels: a rows block (a head's rows of Wo) is that block's product") {
    const attn::Matrix<float> m = attn::test::random_matrix<float>(40, 130, 5);
    const PanelMatrix<float> packed = PanelMatrix<float>::packed(m);
    const attn::Matrix<float> a = attn::test::random_matrix<float>(9, 8, 6);
    attn::Matrix<float> from_panels(9, 130), from_rows(9, 130);
    attn::detail::multiply_rows(a, WeightRows<float>::of(packed).middleRows(16, 8), from_panels, false);
    attn::detail::multiply_rows(a, m.middleRows(16, 8), from_rows, false);
    CHECK(same_bits(from_panels, from_rows));
}
