#pragma once
// What the store-model examples share: finding the shipped model, reading the corpus
// splits, labelling positions as the chapter does, small argument helpers, reading --file,
// progress on a terminal and notices of large outputs.

#include <attn/model/model.hpp>
#include <attn/store.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>
#if __has_include(<unistd.h>)
#include <unistd.h>
#endif

#include "../cli.hpp"
#include "model_instance.hpp"  // Model<float> and its forward pass compiled once, not in every example

namespace store {

/// The model directory: --model if given, else $ATTN_MODEL_DIR, else the source tree's
/// models/store (when run from a build tree), else <prefix>/share/attn/models/store
/// next to an installed executable.
inline std::filesystem::path model_directory(const std::optional<std::string>& flag) {
    namespace fs = std::filesystem;
    if (flag) return *flag;
    if (const char* env = std::getenv("ATTN_MODEL_DIR")) return env;
    const fs::path source_tree = ATTN_SOURCE_MODEL_DIR;
    if (fs::exists(source_tree / "manifest.json")) return source_tree;
    std::error_code error;
    const fs::path executable = fs::read_symlink("/proc/self/exe", error);
    if (!error) {
        const fs::path installed = executable.parent_path().parent_path() / ATTN_INSTALLED_MODEL_DIR;
        if (fs::exists(installed / "manifest.json")) return installed;
    }
    return source_tree;  // Model::load names it in its error
}

struct Product {
    std::string name;
    std::string description;
};

/// The first `limit` products of a split file (TSV with a `name\tdescription` header).
inline std::vector<Product> read_split(const std::filesystem::path& file, std::size_t limit = SIZE_MAX) {
    std::ifstream in(file);
    if (!in) throw attn::io_error(file.string() + ": cannot open the split");
    std::string line;
    if (!std::getline(in, line) || line != "name\tdescription")
        throw attn::format_error(file.string() + ": the first line must be the header name<TAB>description");
    std::vector<Product> products;
    for (std::size_t number = 2; products.size() < limit && std::getline(in, line); ++number) {
        const auto tab = line.find('\t');
        if (tab == std::string::npos)
            throw attn::format_error(file.string() + ":" + std::to_string(number) +
                                     ": no tab between name and description");
        products.push_back({line.substr(0, tab), line.substr(tab + 1)});
    }
    return products;
}

/// Whether the model reads store product texts: `<s> name <sep> description </s>`.
inline bool reads_products(const attn::Tokenizer& tokenizer) {
    return tokenizer.kind() == attn::Tokenizer::Kind::store;
}

/// A token for display: its text, or #id where the model has no tokenizer (or the id is past it).
inline std::string token_text(const attn::Tokenizer& tokenizer, int id) {
    return id >= 0 && id < tokenizer.size() ? tokenizer.token(id) : "#" + std::to_string(id);
}

/// The text of ids for display: decoded, or the ids as #id where the model has no tokenizer.
inline std::string text_of(const attn::Tokenizer& tokenizer, const std::vector<int>& ids) {
    if (tokenizer.size() > 0) return tokenizer.decode(ids);
    std::string text;
    for (int id : ids) text += (text.empty() ? "" : " ") + token_text(tokenizer, id);
    return text;
}

/// Where a token sits, as the chapter labels it: current:, name:, description:, or a marker
/// (token: in a text that is not a store product's).
inline std::string label(const attn::Tokenizer& tokenizer, const std::vector<int>& ids, std::size_t i,
                         std::size_t current, std::size_t separator) {
    const std::string token = token_text(tokenizer, ids[i]);
    if (i == current) return "current:" + token;
    if (separator >= ids.size()) return "token:" + token;  // no <sep>: not a product text
    if (i == 0 || i == separator || ids[i] == tokenizer.end_id()) return token;
    return (i < separator ? "name:" : "description:") + token;
}

/// Index of the first <sep> of a store product text, or ids.size() if there is none.
inline std::size_t separator_position(const attn::Tokenizer& tokenizer, const std::vector<int>& ids) {
    if (!reads_products(tokenizer)) return ids.size();
    for (std::size_t i = 0; i < ids.size(); ++i)
        if (ids[i] == tokenizer.separator_id()) return i;
    return ids.size();
}

/// "1,2,3" as token ids of a vocabulary of `vocabulary` tokens; argument_error naming `flag`
/// and the first entry that is not one.
inline std::vector<int> parse_ids(const std::string& list, long long vocabulary, const std::string& flag = "--ids") {
    std::vector<int> ids;
    std::size_t start = 0;
    while (start <= list.size()) {
        const std::size_t comma = std::min(list.find(',', start), list.size());
        const std::string item = list.substr(start, comma - start);
        char* end = nullptr;
        const long long id = item.empty() ? -1 : std::strtoll(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || item.size() > 12)
            throw attn::argument_error(flag + " needs comma-separated integers, got '" + item + "'");
        if (id < 0 || id >= vocabulary)
            throw attn::argument_error(flag + ": " + item + " is not a token id (the vocabulary has " +
                                       std::to_string(vocabulary) + " tokens)");
        ids.push_back(static_cast<int>(id));
        start = comma + 1;
    }
    return ids;
}

/// The contents of --file PATH, or of standard input for "-"; io_error naming the file.
inline std::string read_text_file(const std::string& path) {
    if (path == "-") {
        std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
        if (std::cin.bad()) throw attn::io_error("--file -: cannot read standard input");
        return text;
    }
    std::error_code error;
    if (std::filesystem::is_directory(path, error)) throw attn::io_error(path + ": is a directory, not a text file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw attn::io_error(path + ": cannot open the text file: " + std::strerror(errno));
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw attn::io_error(path + ": cannot read the text file");
    return text;
}

/// The text of --text or --file (the caller allows at most one), or nothing; argument_error,
/// naming where the text came from, when it is not valid UTF-8: every tokenizer reads
/// characters, and a byte-level one would otherwise encode stray bytes without a word.
inline std::optional<std::string> text_flag(const std::optional<std::string>& text,
                                            const std::optional<std::string>& file) {
    if (!text && !file) return std::nullopt;
    std::string contents = text ? *text : read_text_file(*file);
    const std::string problem = attn::invalid_utf8_message(contents);
    if (!problem.empty())
        throw attn::argument_error((text ? std::string("--text") : "--file " + *file) +
                                   ": the text is not valid UTF-8: " + problem);
    return contents;
}

/// The ids of a text given as --text or --file (the model's tokenizer; see text_flag), --ids,
/// or --name/--description (the store model's product text), exactly one of them.
template <class Model>
std::vector<int> text_ids(const Model& model, const std::optional<std::string>& text,
                          const std::optional<std::string>& ids, const std::optional<std::string>& name,
                          const std::string& description, bool as_prompt) {
    if (ids) return parse_ids(*ids, model.settings().vocabulary_size);
    if (text) {
        const std::string problem = attn::invalid_utf8_message(*text);
        if (!problem.empty()) throw attn::argument_error("the text is not valid UTF-8: " + problem);
        return model.tokenizer().encode(*text);
    }
    if (!reads_products(model.tokenizer()))
        throw attn::argument_error(
            "--name and --description are the store model's product texts; this model's "
            "tokenizer is " +
            std::string(model.tokenizer().kind_name()) + ": give --text or --ids");
    return as_prompt ? attn::store::prompt_ids(model, *name, description)
                     : attn::store::product_ids(model, *name, description);
}

/// Whether stderr is a terminal, for progress lines.
inline bool stderr_is_terminal() {
#if __has_include(<unistd.h>)
    return isatty(STDERR_FILENO) != 0;
#else
    return false;
#endif
}

inline std::string fixed(double value, int digits = 2) {
    std::ostringstream out;
    out.setf(std::ios::fixed);
    out.precision(digits);
    out << value;
    return out.str();
}

/// --quiet: no progress lines even on a terminal (set once, while parsing the command line).
inline bool& quiet() {
    static bool value = false;
    return value;
}

/// Whether progress goes to stderr: a terminal, and no --quiet. Progress lines are rewritten
/// in place ("\r"), which only reads well on a terminal; in a log they would be noise.
inline bool shows_progress() {
    return !quiet() && stderr_is_terminal();
}

/// "832 B", "12.3 KiB", "1.45 GiB".
inline std::string byte_size(std::uintmax_t bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double value = double(bytes);
    int unit = 0;
    while (value >= 1024 && unit < 4) {
        value /= 1024;
        ++unit;
    }
    std::ostringstream out;
    out.setf(std::ios::fixed);
    out.precision(unit == 0 ? 0 : value < 10 ? 2 : 1);
    out << value << " " << units[unit];
    return out.str();
}

/// Outputs above this size are announced on stderr before they are written, so that a
/// command asked for every number of a real model says what it is about to do.
constexpr std::uintmax_t large_output_bytes = std::uintmax_t(64) << 20;

/// "<program>: writing 1.45 GiB <what>" on stderr when bytes > large_output_bytes.
inline void announce_size(const char* program, std::uintmax_t bytes, const std::string& what) {
    if (bytes > large_output_bytes) std::cerr << program << ": writing " << byte_size(bytes) << " " << what << "\n";
}

/// Bytes this process has read from files so far (Linux's /proc/self/io rchar), if known.
inline std::optional<std::uintmax_t> bytes_read_so_far() {
    std::ifstream io("/proc/self/io");
    std::string key;
    std::uintmax_t value = 0;
    while (io >> key >> value)
        if (key == "rchar:") return value;
    return std::nullopt;
}

/// A progress line for one long call that cannot report its own progress (loading a checkpoint,
/// a forward pass, a patching sweep): from half a second on, "<label> … 3.2 s" rewritten four
/// times a second on stderr, with `detail()` (say, the share of the checkpoint read) when
/// given; cleared when the ticker is destroyed. Nothing at all unless shows_progress().
class Ticker {
public:
    explicit Ticker(std::string label, std::function<std::string()> detail = {})
        : label_(std::move(label)), detail_(std::move(detail)) {
        if (shows_progress()) thread_ = std::thread([this] { run(); });
    }
    Ticker(const Ticker&) = delete;
    Ticker& operator=(const Ticker&) = delete;
    ~Ticker() {
        if (!thread_.joinable()) return;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopped_ = true;
        }
        wake_.notify_one();
        thread_.join();
    }

private:
    void run() {
        const auto start = std::chrono::steady_clock::now();
        bool shown = false;
        std::unique_lock<std::mutex> lock(mutex_);
        while (!wake_.wait_for(lock, std::chrono::milliseconds(250), [this] { return stopped_; })) {
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (seconds < 0.5) continue;  // a short call shows nothing
            std::cerr << "\r" << label_ << (detail_ ? " " + detail_() : std::string()) << " … " << fixed(seconds, 1)
                      << " s\033[K" << std::flush;
            shown = true;
        }
        if (shown) std::cerr << "\r\033[K" << std::flush;
    }

    std::string label_;
    std::function<std::string()> detail_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopped_ = false;
    std::thread thread_;
};

/// Model<T>::load(directory), with a progress line on a terminal: the share of the weight
/// files read so far (they are read tensor by tensor, so the process's bytes read measure it).
template <class T>
attn::Model<T> load_model(const std::filesystem::path& directory) {
    std::uintmax_t total = 0;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(directory, error))
        if (entry.path().extension() == ".safetensors") total += entry.file_size(error);
    const std::optional<std::uintmax_t> before = bytes_read_so_far();
    Ticker ticker("loading " + directory.string() + " (" + byte_size(total) + ")", [&]() -> std::string {
        const std::optional<std::uintmax_t> now = bytes_read_so_far();
        if (!now || !before || total == 0) return {};
        return fixed(std::min(100.0, 100.0 * double(*now - *before) / double(total)), 0) + " %";
    });
    return attn::Model<T>::load(directory);
}

}  // namespace store

namespace store {

/// An example's command line, flag by flag: --help (or -h) prints the usage and exits 0; a
/// problem prints itself and the usage on stderr and exits 2.
///
///   store::CommandLine line("generate", usage, argc, argv);
///   while (line.next())
///       if (line.is("--name")) name = line.value(); else line.unknown();
class CommandLine {
public:
    CommandLine(const char* name, const char* usage, int argc, char** argv)
        : name_(name), usage_(usage), argc_(argc), argv_(argv) {}

    /// Moves to the next flag; false after the last.
    bool next() {
        if (++index_ >= argc_) return false;
        flag_ = argv_[index_];
        if (flag_ == "--help" || flag_ == "-h") {
            std::cout << usage_;
            std::exit(0);
        }
        return true;
    }
    bool is(std::string_view flag) const { return flag_ == flag; }
    const std::string& flag() const { return flag_; }
    /// The current flag's value (the next argument).
    std::string value() {
        if (index_ + 1 >= argc_) fail(flag_ + " needs a value");
        return argv_[++index_];
    }
    /// The current flag's value as a non-negative integer (below 10¹⁸).
    long long count() {
        const std::optional<long long> parsed = examples::parse_whole_number(value(), 0, kLargestCount);
        if (!parsed) fail(flag_ + " needs a non-negative integer");
        return *parsed;
    }
    /// The current flag's value as a number in [low, high].
    double number(double low, double high) {
        const std::string text = value();
        char* end = nullptr;
        const double parsed = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !(parsed >= low && parsed <= high))
            fail(flag_ + " needs a number in [" + fixed(low, 0) + ", " + fixed(high, 0) + "]");
        return parsed;
    }
    [[noreturn]] void unknown() const { fail("unknown argument '" + flag_ + "'"); }
    [[noreturn]] void fail(const std::string& problem) const {
        std::cerr << name_ << ": " << problem << "\n\n" << usage_;
        std::exit(2);
    }

private:
    static constexpr long long kLargestCount = 999'999'999'999'999'999;
    const char* name_;
    const char* usage_;
    int argc_;
    char** argv_;
    int index_ = 0;
    std::string flag_;
};

/// Arguments of the analysis examples: --model DIR and --help only.
inline std::optional<std::string> model_flag(int argc, char** argv, const char* name, const char* summary) {
    std::optional<std::string> model;
    auto usage = [&](std::ostream& out) {
        out << "usage: " << name << " [--model DIR] [--help]\n\n"
            << summary
            << "\n\noptions:\n  --model DIR  model directory (default: the shipped models/store)\n"
               "  --help       show this help and exit\n";
    };
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            usage(std::cout);
            std::exit(0);
        }
        if (arg == "--model" && i + 1 < argc) {
            model = argv[++i];
            continue;
        }
        std::cerr << name << ": "
                  << (arg == "--model" ? "--model needs a value" : "unknown argument '" + std::string(arg) + "'")
                  << "\n\n";
        usage(std::cerr);
        std::exit(2);
    }
    return model;
}

/// Arguments of the head analyses: --model DIR, --products N|all (default 300), --help.
struct AnalysisFlags {
    std::optional<std::string> model;
    std::size_t products = 300;
};

inline AnalysisFlags analysis_flags(int argc, char** argv, const char* name, const char* summary) {
    AnalysisFlags flags;
    std::vector<char*> rest{argv[0]};
    for (int i = 1; i < argc; ++i) {
        if (std::string_view(argv[i]) != "--products") {
            rest.push_back(argv[i]);
            continue;
        }
        const std::string value = i + 1 < argc ? argv[++i] : "";
        char* end = nullptr;
        const unsigned long long count = std::strtoull(value.c_str(), &end, 10);
        if (value == "all") {
            flags.products = SIZE_MAX;
        } else if (!value.empty() && *end == '\0' && count > 0) {
            flags.products = std::size_t(count);
        } else {
            std::cerr << name << ": --products needs a positive number or 'all'\n";
            std::exit(2);
        }
    }
    flags.model =
        model_flag(int(rest.size()), rest.data(), name,
                   (std::string(summary) + "\n--products N|all: how many validation products (default 300)").c_str());
    return flags;
}

/// Runs `body` and turns an attn::error into a message on stderr and exit status 1.
template <class Body>
int report_errors(const char* name, Body body) {
    try {
        body();
        return 0;
    } catch (const attn::error& e) {
        std::cerr << name << ": " << e.what() << "\n";
        return 1;
    }
}

/// Softmax of one row of logits, in double.
template <class Row>
Eigen::VectorXd probabilities(const Row& logits) {
    const Eigen::VectorXd z = logits.transpose().template cast<double>();
    const Eigen::VectorXd e = (z.array() - z.maxCoeff()).exp();
    return e / e.sum();
}

/// The product of the validation split with this exact name.
inline Product find_product(const std::filesystem::path& directory, const std::string& name) {
    for (Product& p : read_split(directory / "validation.tsv"))
        if (p.name == name) return p;
    throw attn::argument_error("no validation product named '" + name + "' in " +
                               (directory / "validation.tsv").string());
}

/// Index of the first occurrence of `id` in ids at or after `from`.
inline std::size_t find_id(const std::vector<int>& ids, int id, std::size_t from, const char* what) {
    for (std::size_t i = from; i < ids.size(); ++i)
        if (ids[i] == id) return i;
    throw attn::argument_error(std::string("the text has no ") + what);
}

/// "\r[done/total]" on stderr while a long pass runs, if shows_progress().
inline void progress(std::size_t done, std::size_t total) {
    if (!shows_progress()) return;
    std::cerr << "\r" << done << "/" << total << (done == total ? "\n" : "") << std::flush;
}

}  // namespace store
