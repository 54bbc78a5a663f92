// attn/core/embedding.hpp: token rows and learned positions, and the errors for ids and positions
// outside their tables.
#include <doctest/doctest.h>
#include <attn/core/embedding.hpp>

#include "support.hpp"

using attn::Index;

TEST_CASE_TEMPLATE("embed: the rows the ids name, in order, repeated ids included", T, float, double) {
    const attn::Matrix<T> table = attn::test::random_matrix<T>(10, 6, 5);
    const attn::Matrix<T> x = attn::embed(table, {3, 0, 3, 9});
    REQUIRE(x.rows() == 4);
    REQUIRE(x.cols() == 6);
    CHECK(x.row(0) == table.row(3));
    CHECK(x.row(1) == table.row(0));
    CHECK(x.row(2) == table.row(3));
    CHECK(x.row(3) == table.row(9));
    // A transposed view serves as well (a tied model keeps only the unembedding, C × V).
    const attn::Matrix<T> unembedding = table.transpose();
    CHECK(attn::embed(unembedding.transpose(), {3, 0, 3, 9}) == x);
}

TEST_CASE("embed: an id outside the table is an argument_error naming it") {
    const attn::Matrix<float> table = attn::Matrix<float>::Ones(10, 4);
    CHECK_THROWS_WITH_AS(attn::embed(table, {1, 10}), "embed: ids[1] = 10 is not a row of the table (10 rows)",
                         attn::argument_error);
    CHECK_THROWS_WITH_AS(attn::embed(table, {-1}), doctest::Contains("ids[0] = -1"), attn::argument_error);
    CHECK(attn::embed(table, {}).rows() == 0);
}

TEST_CASE_TEMPLATE("learned_positions: rows first … first + n − 1 of the table", T, float, double) {
    const attn::Matrix<T> table = attn::test::random_matrix<T>(8, 3, 6);
    CHECK(attn::learned_positions(table, 5) == table.topRows(5));
    CHECK(attn::learned_positions(table, 2, 6) == table.middleRows(6, 2));
    CHECK(attn::learned_positions(table, 8) == table);
    CHECK_THROWS_WITH_AS(attn::learned_positions(table, 3, 6),
                         "learned_positions: positions 6 … 8 run past the table's 8 positions", attn::argument_error);
    CHECK_THROWS_AS(attn::learned_positions(table, 1, -1), attn::argument_error);
}
