#pragma once
// The shipped store model (models/store), loaded once per scalar type for the tests that run it.

#include <attn/model/model.hpp>

#include <filesystem>

namespace attn::test {

template <class T>
const Model<T>& store_model() {
    static const Model<T> model = Model<T>::load(std::filesystem::path(ATTN_SOURCE_DIR) / "models" / "store");
    return model;
}

}  // namespace attn::test
