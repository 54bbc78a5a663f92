#pragma once
// Error types. Every failure the library detects is reported as an attn::error
// subclass whose message names the function, argument, file or tensor involved
// and, where there is one, the expected and the actual value.

#include <stdexcept>
#include <string>

namespace attn {

/// Base of every exception thrown by attn.
class error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// An argument has an invalid value (zero heads, a negative position, a bad option...).
class argument_error : public error {
public:
    using error::error;
};

/// Matrix or tensor shapes do not fit together (mismatched widths, empty input...).
class shape_error : public error {
public:
    using error::error;
};

/// A value that cannot be turned into weights: NaN or +infinity among the scores.
class numeric_error : public error {
public:
    using error::error;
};

/// A file could not be opened or read.
class io_error : public error {
public:
    using error::error;
};

/// A file's contents are malformed (corrupt header, bad JSON, wrong tensor shape...).
class format_error : public error {
public:
    using error::error;
};

}  // namespace attn
