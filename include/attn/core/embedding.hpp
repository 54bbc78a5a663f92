#pragma once
// Token and position embeddings: where a transformer's residual stream starts.

#include <Eigen/Core>

#include <vector>

#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"

namespace attn {

/// The rows of `table` the ids name. table: (vocabulary × C); ids: each in 0 … vocabulary − 1
/// → (ids × C). Throws argument_error naming the first id out of range.
template <class D>
Matrix<typename D::Scalar> embed(const Eigen::MatrixBase<D>& table, const std::vector<int>& ids) {
    detail::check_not_empty("embed", "table", table);
    Matrix<typename D::Scalar> x(Index(ids.size()), table.cols());
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] < 0 || ids[i] >= table.rows())
            throw argument_error(detail::message("embed: ids[", i, "] = ", ids[i], " is not a row of the table (",
                                                 table.rows(), " rows)"));
        x.row(Index(i)) = table.row(ids[i]);
    }
    return x;
}

/// Learned absolute positions (GPT-2's wpe): rows first_position … first_position + positions − 1
/// of `table`, (positions × C), to add to the token embeddings. table: (context × C). Throws
/// argument_error if the positions run past the table.
template <class D>
Matrix<typename D::Scalar> learned_positions(const Eigen::MatrixBase<D>& table, Index positions,
                                             Index first_position = 0) {
    detail::check_not_empty("learned_positions", "table", table);
    if (positions < 0 || first_position < 0 || first_position + positions > table.rows())
        throw argument_error(detail::message("learned_positions: positions ", first_position, " … ",
                                             first_position + positions - 1, " run past the table's ", table.rows(),
                                             " positions"));
    return table.middleRows(first_position, positions);
}

}  // namespace attn
