// attn/error.hpp: one base for every error attn throws, so callers can catch attn::error.
#include <doctest/doctest.h>
#include <attn/error.hpp>

#include <type_traits>

TEST_CASE("error types: every one is an attn::error and a std::runtime_error carrying its message") {
    static_assert(std::is_base_of_v<std::runtime_error, attn::error>);
    static_assert(std::is_base_of_v<attn::error, attn::argument_error>);
    static_assert(std::is_base_of_v<attn::error, attn::shape_error>);
    static_assert(std::is_base_of_v<attn::error, attn::numeric_error>);
    static_assert(std::is_base_of_v<attn::error, attn::io_error>);
    static_assert(std::is_base_of_v<attn::error, attn::format_error>);
    CHECK_THROWS_WITH_AS(throw attn::format_error("model.safetensors: truncated"), "model.safetensors: truncated",
                         attn::error);
    CHECK_THROWS_AS(throw attn::shape_error("x"), std::runtime_error);
}
