#include <doctest/doctest.h>
#include <attn/core/types.hpp>

#include <string>

TEST_CASE_TEMPLATE("HeadStack: head(h) is a contiguous (rows × cols) slice, head axis first", T, float, double) {
    attn::HeadStack<T> stack(3, 2, 4);
    CHECK(stack.heads() == 3);
    CHECK(stack.rows() == 2);
    CHECK(stack.cols() == 4);
    CHECK(stack.size() == 24);
    stack.head(1)(1, 2) = T(7);
    CHECK(stack(1, 1, 2) == T(7));
    CHECK(stack.data()[1 * 8 + 1 * 4 + 2] == T(7));  // heads × rows × cols, row-major
    CHECK(stack.head(0).isZero());
    CHECK(stack.head(2).isZero());
}

TEST_CASE("HeadStack: an out-of-range head is an argument_error naming h") {
    attn::HeadStack<float> stack(2, 3, 3);
    CHECK_THROWS_AS(stack.head(2), attn::argument_error);
    CHECK_THROWS_AS(stack.head(-1), attn::argument_error);
    try {
        (void)stack.head(5);
    } catch (const attn::argument_error& e) {
        CHECK(std::string(e.what()).find("h = 5") != std::string::npos);
    }
}

TEST_CASE("error types share the attn::error base") {
    CHECK_THROWS_AS(throw attn::shape_error("x"), attn::error);
    CHECK_THROWS_AS(throw attn::format_error("x"), attn::error);
    CHECK_THROWS_AS(throw attn::numeric_error("x"), attn::error);
    CHECK_THROWS_AS(throw attn::io_error("x"), std::runtime_error);
}
