// Writes docs/API.md from the public headers: every declaration in namespace attn and its
// sub-namespaces outside `detail`, grouped by header, with its signature, its /// comment and
// the attn errors it names or throws.
//
//   attn_api_listing INCLUDE_DIR [OUTPUT]           the listing, to OUTPUT or standard output
//   attn_api_listing --check EXPECTED INCLUDE_DIR   exit 1, naming the first differing line,
//                                                   if EXPECTED is not the listing
//
// INCLUDE_DIR may also be one header. Every *.hpp below it is read, except in directories
// named detail. The parser is heuristic (comments, strings and preprocessor lines blanked,
// then brace, parenthesis and namespace tracking), fitted to attn's headers; anything it
// cannot follow (unbalanced braces or parentheses, an unterminated comment or string) stops it
// with a message naming the file and line, so a confused parser never writes a short listing.
#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

const char* const kErrorTypes[] = {"shape_error", "argument_error", "numeric_error", "io_error", "format_error"};

const char* const kRegenerate =
    "cmake --build build --target attn_api_listing && build/tests/api/attn_api_listing include docs/API.md";

class ParseError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

bool is_identifier_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string trim(const std::string& text) {
    std::size_t begin = 0, end = text.size();
    while (begin < end && is_space(text[begin])) ++begin;
    while (end > begin && is_space(text[end - 1])) --end;
    return text.substr(begin, end - begin);
}

/// Runs of whitespace as one space, none just inside parentheses and brackets.
std::string normalise_space(const std::string& text) {
    std::string out;
    bool pending_space = false;
    for (char c : trim(text)) {
        if (is_space(c)) {
            pending_space = true;
            continue;
        }
        if (pending_space && !out.empty() && out.back() != '(' && out.back() != '[' && c != ')' && c != ']') out += ' ';
        pending_space = false;
        out += c;
    }
    return out;
}

/// The identifiers of a piece of code, in order.
std::vector<std::string> identifiers(const std::string& code) {
    std::vector<std::string> words;
    for (std::size_t i = 0; i < code.size();) {
        if (is_identifier_char(code[i])) {
            std::size_t j = i;
            while (j < code.size() && is_identifier_char(code[j])) ++j;
            if (!(code[i] >= '0' && code[i] <= '9')) words.push_back(code.substr(i, j - i));
            i = j;
        } else {
            ++i;
        }
    }
    return words;
}

bool has_word(const std::string& text, const std::string& word) {
    for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
        const bool starts = at == 0 || !is_identifier_char(text[at - 1]);
        const bool ends = at + word.size() == text.size() || !is_identifier_char(text[at + word.size()]);
        if (starts && ends) return true;
    }
    return false;
}

/// The attn error types a comment names, as a bit set in kErrorTypes order.
unsigned errors_named(const std::string& text) {
    unsigned errors = 0;
    for (unsigned e = 0; e < 5; ++e)
        if (has_word(text, kErrorTypes[e])) errors |= 1u << e;
    return errors;
}

/// A header's text three ways, all of the same length so that offsets agree: `code` without
/// comments and preprocessor lines, `masked` also without the contents of string and character
/// literals (what structure is read from), and the /// comments by line.
struct Source {
    std::string path;  // as shown, relative to the include directory
    std::string text;
    std::string code;
    std::string masked;
    std::vector<std::size_t> line_starts;
    std::map<int, std::string> doc_lines;       // line → text of a /// comment alone on its line
    std::map<int, std::string> trailing_docs;   // line → text of a ///< comment after code
    std::map<int, std::size_t> trailing_start;  // line → where that ///< comment starts
    std::vector<std::string> top_comment;       // the first // comment block, before any code

    int line_of(std::size_t offset) const {
        return static_cast<int>(std::upper_bound(line_starts.begin(), line_starts.end(), offset) - line_starts.begin());
    }
    [[noreturn]] void fail(std::size_t offset, const std::string& why) const {
        throw ParseError(path + ":" + std::to_string(line_of(offset)) + ": cannot parse: " + why);
    }
};

bool only_space_before(const std::string& text, std::size_t offset) {
    while (offset > 0 && text[offset - 1] != '\n') {
        if (!is_space(text[offset - 1])) return false;
        --offset;
    }
    return true;
}

Source read_source(const fs::path& file, const std::string& shown) {
    Source s;
    s.path = shown;
    std::ifstream in(file, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + file.string());
    std::ostringstream buffer;
    buffer << in.rdbuf();
    s.text = buffer.str();
    const std::string& t = s.text;
    s.code = t;
    s.masked = t;
    s.line_starts.push_back(0);
    for (std::size_t i = 0; i < t.size(); ++i)
        if (t[i] == '\n') s.line_starts.push_back(i + 1);

    const auto blank = [&](std::string& into, std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i)
            if (into[i] != '\n') into[i] = ' ';
    };
    bool seen_code = false;
    bool top_comment_done = false;
    std::size_t i = 0;
    while (i < t.size()) {
        const char c = t[i];
        if (c == '/' && i + 1 < t.size() && t[i + 1] == '/') {
            std::size_t end = t.find('\n', i);
            if (end == std::string::npos) end = t.size();
            const std::string body = t.substr(i, end - i);
            const int line = s.line_of(i);
            if (body.compare(0, 4, "///<") == 0) {
                s.trailing_docs[line] = trim(body.substr(4));
                s.trailing_start[line] = i;
            } else if (body.compare(0, 3, "///") == 0 && (body.size() == 3 || body[3] != '/') &&
                       only_space_before(t, i)) {
                s.doc_lines[line] = trim(body.substr(3));
            } else if (!seen_code && !top_comment_done && only_space_before(t, i)) {
                std::string line = body.substr(2);
                if (!line.empty() && line[0] == ' ') line.erase(0, 1);
                s.top_comment.push_back(line);
            }
            blank(s.code, i, end);
            blank(s.masked, i, end);
            i = end;
            continue;
        }
        if (c == '/' && i + 1 < t.size() && t[i + 1] == '*') {
            const std::size_t end = t.find("*/", i + 2);
            if (end == std::string::npos) s.fail(i, "a /* comment is never closed");
            blank(s.code, i, end + 2);
            blank(s.masked, i, end + 2);
            i = end + 2;
            continue;
        }
        if (c == '#' && only_space_before(t, i)) {  // a directive, with its continuation lines
            std::size_t end = i;
            while (end < t.size() && t[end] != '\n') {
                if (t[end] == '\\' && end + 1 < t.size() && t[end + 1] == '\n') ++end;
                ++end;
            }
            if (!s.top_comment.empty()) top_comment_done = true;
            blank(s.code, i, end);
            blank(s.masked, i, end);
            i = end;
            continue;
        }
        if (c == '\n' && !s.top_comment.empty() && i + 1 < t.size() && t[i + 1] == '\n') top_comment_done = true;
        if (c == '"' && i > 0 && t[i - 1] == 'R' &&
            (i < 2 || !is_identifier_char(t[i - 2]) || t[i - 2] == '8' || t[i - 2] == 'u' || t[i - 2] == 'U' ||
             t[i - 2] == 'L')) {
            const std::size_t open = t.find('(', i);
            if (open == std::string::npos) s.fail(i, "a raw string literal has no (");
            const std::string close = ")" + t.substr(i + 1, open - i - 1) + "\"";
            const std::size_t end = t.find(close, open);
            if (end == std::string::npos) s.fail(i, "a raw string literal is never closed");
            blank(s.masked, i + 1, end + close.size() - 1);
            i = end + close.size();
            seen_code = true;
            continue;
        }
        if (c == '\'' && i > 0 && is_identifier_char(t[i - 1])) {  // a digit separator, or u8'x'
            std::size_t word = i;
            while (word > 0 && (is_identifier_char(t[word - 1]) || t[word - 1] == '\'')) --word;
            if (t[word] >= '0' && t[word] <= '9') {
                ++i;
                continue;
            }
        }
        if (c == '"' || c == '\'') {
            std::size_t end = i + 1;
            while (end < t.size() && t[end] != c) {
                if (t[end] == '\n')
                    s.fail(i, std::string("a ") + (c == '"' ? "string" : "character") +
                                  " literal is not closed on its line");
                end += t[end] == '\\' ? 2 : 1;
            }
            if (end >= t.size()) s.fail(i, "a literal is never closed");
            blank(s.masked, i + 1, end);
            i = end + 1;
            seen_code = true;
            continue;
        }
        if (!is_space(c)) seen_code = true;
        ++i;
    }
    return s;
}

/// One documented entity: a namespace-level declaration, or a member of a class.
struct Entity {
    std::string kind;  // function, class, struct, union, enum, alias, constant, variable, member
    std::string name;  // relative to namespace attn (store::product_ids)
    std::string signature;
    std::vector<std::string> doc;
    unsigned errors = 0;
    std::vector<Entity> members;  // public members of a type, enumerators of an enum
};

/// The first sentence of a header's top comment: up to the first full stop outside
/// parentheses, or to a line that ends with a colon (a table or a formula follows).
std::string first_sentence(const std::vector<std::string>& lines) {
    std::string text;
    int depth = 0;
    for (const std::string& line : lines) {
        if (trim(line).empty() || line.compare(0, 2, "  ") == 0) break;  // a paragraph's end, an indented block
        const std::string words = trim(line);
        for (std::size_t at = 0; at < words.size(); ++at) {
            const char c = words[at];
            if (c == '(') ++depth;
            if (c == ')') --depth;
            if (c != '.' || depth != 0 || (at + 1 < words.size() && words[at + 1] != ' ')) continue;
            const std::string before = (text.empty() ? "" : text + " ") + words.substr(0, at + 1);
            const auto ends_with = [&](const std::string& tail) {
                return before.size() >= tail.size() &&
                       before.compare(before.size() - tail.size(), tail.size(), tail) == 0 &&
                       (before.size() == tail.size() || !is_identifier_char(before[before.size() - tail.size() - 1]));
            };
            if (ends_with("e.g.") || ends_with("i.e.") || ends_with("etc.") || ends_with("vs.") || ends_with("al."))
                continue;
            return before;
        }
        text += (text.empty() ? "" : " ") + words;
        if (!text.empty() && text.back() == ':') break;
    }
    return text;
}

class Parser {
public:
    explicit Parser(const Source& source) : s_(source), m_(source.masked) {}

    std::vector<Entity> parse() {
        std::size_t pos = 0;
        Scope file;
        parse_scope(pos, file, std::string::npos);
        return std::move(file.entities);
    }

private:
    struct Scope {
        bool is_class = false;
        bool listed = false;  // inside namespace attn, outside detail (for a class: the class is listed)
        bool public_access = true;
        std::string prefix;  // qualification relative to attn, "store::"
        std::vector<std::string> namespaces;
        std::vector<Entity> entities;
    };

    const Source& s_;
    const std::string& m_;

    void skip_space(std::size_t& pos) const {
        while (pos < m_.size() && is_space(m_[pos])) ++pos;
    }

    /// The offset just past the } matching the { at `open`.
    std::size_t skip_braces(std::size_t open) const {
        int depth = 0;
        for (std::size_t i = open; i < m_.size(); ++i) {
            if (m_[i] == '{') ++depth;
            if (m_[i] == '}' && --depth == 0) return i + 1;
        }
        s_.fail(open, "unbalanced braces: this { is never closed");
    }

    char previous_char(std::size_t pos, std::size_t floor) const {
        while (pos > floor && is_space(m_[pos - 1])) --pos;
        return pos > floor ? m_[pos - 1] : '\0';
    }

    std::vector<std::string> doc_above(std::size_t start) const {
        std::vector<std::string> doc;
        if (!only_space_before(s_.code, start)) return doc;  // not the first declaration on its line
        for (int line = s_.line_of(start) - 1; s_.doc_lines.count(line); --line) doc.push_back(s_.doc_lines.at(line));
        std::reverse(doc.begin(), doc.end());
        return doc;
    }

    /// The ///< comment after the code that ends at `end`, on the same line.
    std::vector<std::string> doc_after(std::size_t end) const {
        const int line = s_.line_of(end == 0 ? 0 : end - 1);
        const auto found = s_.trailing_docs.find(line);
        if (found == s_.trailing_docs.end() || s_.trailing_start.at(line) < end - 1) return {};
        return {found->second};
    }

    /// Errors thrown directly in [begin, end): `throw X_error` or `throw attn::X_error`.
    unsigned errors_thrown(std::size_t begin, std::size_t end) const {
        unsigned errors = 0;
        const std::string body = m_.substr(begin, end - begin);
        for (std::size_t at = body.find("throw"); at != std::string::npos; at = body.find("throw", at + 5)) {
            if ((at > 0 && is_identifier_char(body[at - 1])) ||
                (at + 5 < body.size() && is_identifier_char(body[at + 5])))
                continue;
            std::size_t i = at + 5;
            while (i < body.size() && is_space(body[i])) ++i;
            if (body.compare(i, 6, "attn::") == 0) i += 6;
            std::size_t j = i;
            while (j < body.size() && is_identifier_char(body[j])) ++j;
            const std::string type = body.substr(i, j - i);
            for (unsigned e = 0; e < 5; ++e)
                if (type == kErrorTypes[e]) errors |= 1u << e;
        }
        return errors;
    }

    /// The length of a leading `template <...>` (nested ones included), 0 without one.
    static std::size_t template_prefix_length(const std::string& h) {
        std::size_t i = 0;
        while (i < h.size() && is_space(h[i])) ++i;
        if (h.compare(i, 8, "template") != 0 || (i + 8 < h.size() && is_identifier_char(h[i + 8]))) return 0;
        i += 8;
        while (i < h.size() && is_space(h[i])) ++i;
        if (i >= h.size() || h[i] != '<') return 0;
        int angle = 0, paren = 0;
        for (; i < h.size(); ++i) {
            if (h[i] == '(') ++paren;
            if (h[i] == ')') --paren;
            if (paren == 0 && h[i] == '<') ++angle;
            if (paren == 0 && h[i] == '>' && --angle == 0) break;
        }
        if (i >= h.size()) return 0;
        return i + 1 + template_prefix_length(h.substr(i + 1));
    }

    /// head without its template prefix, which goes to *prefix (whitespace normalised).
    static std::string strip_template_prefix(const std::string& head, std::string* prefix) {
        const std::size_t length = template_prefix_length(head);
        if (prefix) *prefix = normalise_space(head.substr(0, length));
        return trim(head.substr(length));
    }

    /// The signature as declared: the template line, then the rest on one line.
    static std::string signature_of(const std::string& code) {
        std::string prefix;
        const std::string rest = strip_template_prefix(code, &prefix);
        return prefix.empty() ? normalise_space(rest) : prefix + "\n" + normalise_space(rest);
    }

    static bool is_type_head(const std::string& words0) {
        return words0 == "class" || words0 == "struct" || words0 == "union" || words0 == "enum";
    }

    /// Offset in head of its parameter list's (: the first ( after any template prefix that
    /// is not part of an operator's name; npos if there is none.
    static std::size_t parameter_list(const std::string& head) {
        for (std::size_t i = template_prefix_length(head); i < head.size(); ++i) {
            if (head.compare(i, 8, "operator") == 0 && (i == 0 || !is_identifier_char(head[i - 1])) &&
                (i + 8 >= head.size() || !is_identifier_char(head[i + 8]))) {
                std::size_t j = i + 8;
                while (j < head.size() && is_space(head[j])) ++j;
                return head.find('(', head.compare(j, 2, "()") == 0 ? j + 2 : j);
            }
            if (head[i] == '(') return i;
        }
        return std::string::npos;
    }

    /// Whether the declaration head (template prefix removed) is a function's.
    static bool is_function_head(const std::string& head) {
        const std::size_t open = parameter_list(head);
        if (open == std::string::npos) return false;
        if (has_word(head.substr(0, open), "operator")) return true;
        int depth = 0;
        for (std::size_t i = 0; i < open; ++i) {
            const char c = head[i];
            if (c == '(' || c == '[' || c == '{') ++depth;
            if (c == ')' || c == ']' || c == '}') --depth;
            if (depth == 0 && c == '=') return false;  // an initialiser that calls something
        }
        return true;
    }

    static std::string function_name(const std::string& head) {
        const std::size_t open = parameter_list(head);
        std::string before = trim(head.substr(0, open));
        const std::size_t op = before.rfind("operator");
        if (op != std::string::npos && has_word(before.substr(op), "operator"))
            return normalise_space(before.substr(op));
        std::size_t begin = before.size();
        while (begin > 0 && (is_identifier_char(before[begin - 1]) || before[begin - 1] == '~')) --begin;
        return before.substr(begin);
    }

    /// Whether a function's name is qualified by its class (`Model<T>::load`): a member defined
    /// outside the class, which the class's own listing already shows with its documentation.
    static bool defines_member(const std::string& head) {
        const std::string before = trim(head.substr(0, parameter_list(head)));
        const std::string name = function_name(head);
        if (name.rfind("operator", 0) == 0) {
            const std::size_t op = before.rfind("operator");
            return op >= 2 && before.compare(op - 2, 2, "::") == 0;
        }
        const std::size_t begin = before.size() - name.size();
        return begin >= 2 && before.compare(begin - 2, 2, "::") == 0;
    }

    /// The function's declaration without a constructor's initialiser list (code from start).
    std::string cut_initialisers(std::size_t start, std::size_t end) const {
        const std::string head = m_.substr(start, end - start);
        std::size_t i = parameter_list(head);
        for (int depth = 0; i < head.size(); ++i) {  // past the parameter list
            if (head[i] == '(' || head[i] == '[') ++depth;
            if ((head[i] == ')' || head[i] == ']') && --depth == 0) break;
        }
        const std::size_t after = ++i;
        for (int depth = 0; i < head.size(); ++i) {
            const char c = head[i];
            if (c == '(' || c == '[') ++depth;
            if (c == ')' || c == ']') --depth;
            if (depth == 0 && c == ':' && (i + 1 >= head.size() || head[i + 1] != ':') &&
                (i == after || head[i - 1] != ':'))
                return s_.code.substr(start, i);
        }
        return s_.code.substr(start, end - start);
    }

    bool in_initialiser_list(std::size_t start, std::size_t brace) const {
        const std::string head = m_.substr(start, brace - start);
        return cut_initialisers(start, brace).size() < head.size();
    }

    static std::string name_before(const std::string& head) {
        const std::vector<std::string> words = identifiers(head);
        return words.empty() ? std::string() : words.back();
    }

    /// A type's name: the identifier before its base clause, `final` or the end of its head.
    static std::string type_name(const std::string& head) {
        std::string h = head;
        int depth = 0;
        for (std::size_t i = 0; i < h.size(); ++i) {
            if (h[i] == '(' || h[i] == '<') ++depth;
            if (h[i] == ')' || h[i] == '>') --depth;
            if (depth == 0 && h[i] == ':' && (i + 1 >= h.size() || h[i + 1] != ':') && (i == 0 || h[i - 1] != ':')) {
                h = h.substr(0, i);
                break;
            }
        }
        std::vector<std::string> words = identifiers(h);
        while (!words.empty() && words.back() == "final") words.pop_back();
        return words.empty() ? std::string() : words.back();
    }

    void add(Scope& scope, Entity entity) {
        if (!scope.listed) return;
        if (scope.is_class && !scope.public_access) return;
        scope.entities.push_back(std::move(entity));
    }

    /// Declarations until the } that closes the scope (at end of file for the file scope).
    void parse_scope(std::size_t& pos, Scope& scope, std::size_t opened_at) {
        for (;;) {
            skip_space(pos);
            if (pos >= m_.size()) {
                if (opened_at != std::string::npos) s_.fail(opened_at, "unbalanced braces: this { is never closed");
                return;
            }
            if (m_[pos] == '}') {
                if (opened_at == std::string::npos) s_.fail(pos, "unbalanced braces: this } closes nothing");
                ++pos;
                return;
            }
            if (m_[pos] == ';') {
                ++pos;
                continue;
            }
            if (scope.is_class) {
                bool access = false;
                for (const char* specifier : {"public", "protected", "private"}) {
                    const std::size_t n = std::char_traits<char>::length(specifier);
                    std::size_t colon = pos + n;
                    while (colon < m_.size() && is_space(m_[colon])) ++colon;
                    if (m_.compare(pos, n, specifier) == 0 && colon < m_.size() && m_[colon] == ':' &&
                        (colon + 1 >= m_.size() || m_[colon + 1] != ':')) {
                        scope.public_access = specifier[1] == 'u';
                        pos = colon + 1;
                        access = true;
                    }
                }
                if (access) continue;
            }
            parse_declaration(pos, scope);
        }
    }

    void parse_declaration(std::size_t& pos, Scope& scope) {
        const std::size_t start = pos;
        int depth = 0;  // parentheses and brackets
        std::vector<std::size_t> opened;
        for (std::size_t i = start;; ++i) {
            if (i >= m_.size()) {
                if (depth > 0) s_.fail(opened.back(), "unbalanced parentheses: this ( or [ is never closed");
                s_.fail(start, "the declaration here never ends (no ; or {)");
            }
            const char c = m_[i];
            if (c == '(' || c == '[') {
                ++depth;
                opened.push_back(i);
                continue;
            }
            if (c == ')' || c == ']') {
                if (depth == 0) s_.fail(i, std::string("unbalanced parentheses: this ") + c + " closes nothing");
                --depth;
                opened.pop_back();
                continue;
            }
            if (depth > 0 && (c == ';' || c == '}'))
                s_.fail(opened.back(), "unbalanced parentheses: this ( or [ is never closed");
            if (c == '}') s_.fail(i, "unbalanced braces: a } inside a declaration");
            if (c == ';' && depth == 0) {
                declaration_ends(scope, start, i, std::string::npos, std::string::npos);
                pos = i + 1;
                return;
            }
            if (c != '{') continue;
            if (depth > 0) {  // a default argument's {} or a lambda's body
                i = skip_braces(i) - 1;
                continue;
            }

            const std::string head = m_.substr(start, i - start);
            const std::vector<std::string> words = identifiers(head);
            if (!words.empty() &&
                (words[0] == "namespace" || (words[0] == "inline" && words.size() > 1 && words[1] == "namespace"))) {
                Scope inner;
                inner.namespaces = scope.namespaces;
                for (std::size_t w = words[0] == "inline" ? 2 : 1; w < words.size(); ++w)
                    inner.namespaces.push_back(words[w]);
                const bool in_attn = !inner.namespaces.empty() && inner.namespaces[0] == "attn";
                const bool in_detail =
                    std::find(inner.namespaces.begin(), inner.namespaces.end(), "detail") != inner.namespaces.end();
                inner.listed = in_attn && !in_detail;
                for (std::size_t n = 1; n < inner.namespaces.size(); ++n) inner.prefix += inner.namespaces[n] + "::";
                pos = i + 1;
                parse_scope(pos, inner, i);
                for (Entity& e : inner.entities) scope.entities.push_back(std::move(e));
                return;
            }
            const std::string bare = strip_template_prefix(head, nullptr);
            const std::vector<std::string> bare_words = identifiers(bare);
            const bool friend_decl = !bare_words.empty() && bare_words[0] == "friend";
            if (!bare_words.empty() && is_type_head(bare_words[0]) && bare.find('=') == std::string::npos) {
                parse_type(pos, scope, start, i, bare_words[0] == "enum");
                return;
            }
            if (is_function_head(bare) || (friend_decl && is_function_head(bare.substr(6)))) {
                if (in_initialiser_list(start, i) &&
                    (is_identifier_char(previous_char(i, start)) || previous_char(i, start) == '>')) {
                    i = skip_braces(i) - 1;  // a member's brace initialiser
                    continue;
                }
                const std::size_t body_end = skip_braces(i);
                declaration_ends(scope, start, i, i, body_end);
                pos = body_end;
                return;
            }
            i = skip_braces(i) - 1;  // an initialiser: the declaration goes on to its ;
        }
    }

    /// A class, struct, union or enum whose body opens at `brace`; its public members listed.
    void parse_type(std::size_t& pos, Scope& scope, std::size_t start, std::size_t brace, bool is_enum) {
        const std::string head = m_.substr(start, brace - start);
        std::string prefix;
        const std::vector<std::string> words = identifiers(strip_template_prefix(head, &prefix));
        Entity type;
        type.kind = is_enum ? "enum" : words[0];
        type.name = scope.prefix + type_name(strip_template_prefix(head, nullptr));
        type.signature = signature_of(s_.code.substr(start, brace - start));
        type.doc = doc_above(start);
        const std::size_t end = skip_braces(brace);
        type.errors = errors_named(join(type.doc)) | errors_thrown(brace, end);
        Scope inner;
        inner.is_class = !is_enum;
        inner.listed = scope.listed && (!scope.is_class || scope.public_access);
        inner.public_access = words[0] != "class";
        if (is_enum) {
            parse_enumerators(brace, end, inner);
        } else {
            pos = brace + 1;
            parse_scope(pos, inner, brace);
            if (pos != end) s_.fail(brace, "this type's body ends elsewhere than its braces say");
        }
        type.members = std::move(inner.entities);
        if (scope.is_class) {
            type.signature = one_line(type.signature);
            type.kind = "member";
        }
        add(scope, std::move(type));
        // Declarators after the body (struct {...} x;) end at the ;
        pos = end;
        skip_space(pos);
        if (pos < m_.size() && m_[pos] != ';' && m_[pos] != '}') {
            const std::size_t semicolon = m_.find(';', pos);
            if (semicolon == std::string::npos) s_.fail(end, "no ; after this type's body");
            pos = semicolon + 1;
        }
    }

    void parse_enumerators(std::size_t brace, std::size_t end, Scope& scope) {
        std::size_t begin = brace + 1;
        int depth = 0;
        for (std::size_t i = begin; i < end; ++i) {
            const char c = m_[i];
            if (c == '(' || c == '{' || c == '[') ++depth;
            if ((c == ')' || c == '}' || c == ']') && (depth > 0 || i + 1 < end)) --depth;
            if ((c == ',' && depth == 0) || i + 1 == end) {
                const std::string text = s_.code.substr(begin, i - begin);
                if (!trim(text).empty()) {
                    std::size_t first = begin;
                    skip_space(first);
                    Entity enumerator;
                    enumerator.kind = "member";
                    enumerator.signature = normalise_space(text);
                    enumerator.doc = doc_above(first);
                    if (enumerator.doc.empty()) enumerator.doc = doc_after(c == ',' ? i + 1 : i);
                    if (enumerator.doc.empty() && c != ',') enumerator.doc = doc_after(last_code_before(i) + 1);
                    add(scope, std::move(enumerator));
                }
                begin = i + 1;
            }
        }
    }

    std::size_t last_code_before(std::size_t i) const {
        while (i > 0 && is_space(m_[i - 1])) --i;
        return i == 0 ? 0 : i - 1;
    }

    static std::string join(const std::vector<std::string>& lines) {
        std::string text;
        for (const std::string& line : lines) text += (text.empty() || line.empty() ? "" : " ") + line;
        return text;
    }

    static std::string one_line(const std::string& signature) {
        std::string out = signature;
        std::replace(out.begin(), out.end(), '\n', ' ');
        return out;
    }

    /// A declaration [start, end) ended by ; (body npos) or by a function body [body_begin, body_end).
    void declaration_ends(Scope& scope, std::size_t start, std::size_t end, std::size_t body_begin,
                          std::size_t body_end) {
        const std::string head = m_.substr(start, end - start);
        std::string template_prefix;
        const std::string bare = strip_template_prefix(head, &template_prefix);
        const std::vector<std::string> words = identifiers(bare);
        if (words.empty()) s_.fail(start, "a declaration without a name");
        const std::string& first = words[0];
        if (first == "static_assert" || (first == "friend" && words.size() > 1 && is_type_head(words[1])) ||
            (first == "using" && words.size() > 1 && words[1] == "namespace") || first == "extern")
            return;
        const bool ends_with_semicolon = body_begin == std::string::npos;
        if (ends_with_semicolon && is_type_head(first) && bare.find('{') == std::string::npos &&
            bare.find('=') == std::string::npos)
            return;                                                  // a forward declaration
        if (template_prefix.empty() && first == "template") return;  // an explicit instantiation

        Entity entity;
        entity.doc = doc_above(start);
        const std::size_t close = ends_with_semicolon ? end : body_end;
        if (entity.doc.empty()) entity.doc = doc_after(close + (ends_with_semicolon ? 1 : 0));
        entity.errors = errors_named(join(entity.doc));
        if (body_begin != std::string::npos) entity.errors |= errors_thrown(body_begin, body_end);

        const std::string function_head = first == "friend" ? bare.substr(bare.find("friend") + 6) : bare;
        if (first == "using" || first == "typedef") {
            if (first == "using" && bare.find('=') == std::string::npos) {
                if (!scope.is_class) return;  // a using-declaration brings in a name, declares none
                entity.kind = "member";
                entity.signature = normalise_space(s_.code.substr(start, end - start));
                add(scope, std::move(entity));
                return;
            }
            entity.kind = "alias";
            entity.name = scope.prefix + (first == "using" ? words[1] : name_before(bare));
            entity.signature = signature_of(s_.code.substr(start, end - start));
        } else if (is_function_head(function_head)) {
            if (!scope.is_class && defines_member(function_head)) return;  // listed in its class
            entity.kind = "function";
            entity.name = scope.prefix + function_name(function_head);
            entity.signature = signature_of(ends_with_semicolon ? s_.code.substr(start, end - start)
                                                                : cut_initialisers(start, body_begin));
        } else {
            const bool constant = has_word(bare, "constexpr") || has_word(bare, "const");
            entity.kind = constant ? "constant" : "variable";
            std::size_t cut = template_prefix_length(head);
            for (int depth = 0; cut < head.size(); ++cut) {
                const char c = head[cut];
                if (c == '(' || c == '[') ++depth;
                if (c == ')' || c == ']') --depth;
                if (depth == 0 && (c == '{' || (c == '=' && head[cut - 1] != '=' && head[cut + 1] != '='))) break;
            }
            entity.name = scope.prefix + name_before(head.substr(0, cut));
            std::string code = s_.code.substr(start, end - start);
            // A long initialiser is not part of the interface; a short one says what the constant is.
            if (!scope.is_class && normalise_space(code.substr(cut)).size() > 40) code = code.substr(0, cut);
            entity.signature = signature_of(code);
        }
        if (scope.is_class) {
            entity.kind = "member";
            entity.signature = one_line(entity.signature);
        }
        add(scope, std::move(entity));
    }
};

void write_members(std::ostream& out, const std::vector<Entity>& members, int indent);

/// Comment text as Markdown prose: a < that would open an HTML tag (<s>, <sep>) is escaped,
/// except in `code`.
std::string prose(const std::string& text) {
    std::string out;
    bool in_code = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char next = i + 1 < text.size() ? text[i + 1] : '\0';
        const bool tag = (next >= 'a' && next <= 'z') || (next >= 'A' && next <= 'Z') || next == '/' || next == '!';
        if (text[i] == '`') in_code = !in_code;
        out += text[i] == '<' && tag && !in_code ? std::string("&lt;") : std::string(1, text[i]);
    }
    return out;
}

/// The listing of every public header under `root` (or of the one header `root`).
std::string listing(const fs::path& root) {
    std::vector<std::pair<std::string, fs::path>> headers;
    if (fs::is_regular_file(root)) {
        headers.emplace_back(root.filename().generic_string(), root);
    } else if (fs::is_directory(root)) {
        for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
            if (it->is_directory() && it->path().filename() == "detail") {
                it.disable_recursion_pending();
                continue;
            }
            if (it->is_regular_file() && it->path().extension() == ".hpp")
                headers.emplace_back(fs::relative(it->path(), root).generic_string(), it->path());
        }
    } else {
        throw std::runtime_error(root.string() + " is neither a directory nor a header");
    }
    if (headers.empty()) throw std::runtime_error("no .hpp header under " + root.string());
    std::sort(headers.begin(), headers.end());

    std::ostringstream out;
    out << "# attn API\n\n"
        << "Every public declaration of the headers (namespace `attn` outside `detail`), one section per header.\n"
        << "Generated from the headers by tests/api/api_listing.cpp; the `api_listing` test fails when they\n"
        << "disagree (and prints the command for its build directory). Do not edit: regenerate it from the\n"
        << "repository's root with `" << kRegenerate << "`.\n";
    std::size_t declarations = 0;
    for (const auto& [shown, file] : headers) {
        const Source source = read_source(file, shown);
        const std::vector<Entity> entities = Parser(source).parse();
        declarations += entities.size();
        out << "\n## " << shown << "\n";
        const std::string sentence = first_sentence(source.top_comment);
        if (!sentence.empty()) out << "\n" << prose(sentence) << "\n";
        if (entities.empty()) {
            std::vector<std::string> includes;
            std::istringstream lines(source.text);
            for (std::string line; std::getline(lines, line);) {
                const std::size_t open = line.find("#include \"");
                if (open == std::string::npos) continue;
                const std::size_t close = line.find('"', open + 10);
                const std::string included = "`" + line.substr(open + 10, close - open - 10) + "`";
                if (close != std::string::npos && included.find("/detail/") == std::string::npos &&
                    std::find(includes.begin(), includes.end(), included) == includes.end())
                    includes.push_back(included);
            }
            out << "\nNo declarations of its own";
            for (std::size_t i = 0; i < includes.size(); ++i) out << (i == 0 ? "; includes " : ", ") << includes[i];
            out << ".\n";
            continue;
        }
        // Overloads (and a declaration repeated by its definition) are listed together, where
        // the name first appears.
        std::vector<std::pair<std::string, std::vector<const Entity*>>> groups;
        for (const Entity& e : entities) {
            const std::string key = e.kind + " " + e.name;
            auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
            if (group == groups.end()) {
                groups.push_back({key, {}});
                group = groups.end() - 1;
            }
            const bool repeated = std::any_of(group->second.begin(), group->second.end(),
                                              [&](const Entity* seen) { return seen->signature == e.signature; });
            if (!repeated) group->second.push_back(&e);
        }
        for (const auto& [key, overloads] : groups) {
            const Entity& first = *overloads.front();
            out << "\n### `" << first.name << "` (" << first.kind << ")\n";
            for (const Entity* e : overloads) {
                out << "\n```cpp\n" << e->signature << "\n```\n";
                if (!e->doc.empty()) {
                    out << "\n";
                    for (const std::string& line : e->doc) out << prose(line) << "\n";
                }
                if (e->errors) {
                    out << "\nerrors:";
                    for (unsigned i = 0, n = 0; i < 5; ++i)
                        if (e->errors & (1u << i)) out << (n++ ? ", `" : " `") << kErrorTypes[i] << "`";
                    out << "\n";
                }
                if (!e->members.empty()) {
                    out << "\n" << (e->kind == "enum" ? "Values" : "Public members") << ":\n\n";
                    write_members(out, e->members, 0);
                }
            }
        }
    }
    if (declarations == 0) throw std::runtime_error("no public declaration found under " + root.string());
    return out.str();
}

void write_members(std::ostream& out, const std::vector<Entity>& members, int indent) {
    for (const Entity& m : members) {
        out << std::string(static_cast<std::size_t>(indent) * 2, ' ') << "- `" << m.signature << "`";
        std::string doc;
        for (const std::string& line : m.doc) doc += (doc.empty() || line.empty() ? "" : " ") + line;
        if (!doc.empty()) out << ": " << prose(doc);
        if (m.errors) {
            out << " (errors:";
            for (unsigned i = 0, n = 0; i < 5; ++i)
                if (m.errors & (1u << i)) out << (n++ ? ", `" : " `") << kErrorTypes[i] << "`";
            out << ")";
        }
        out << "\n";
        write_members(out, m.members, indent + 1);
    }
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    std::ostringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

/// 0 if `expected` holds the listing; else 1, naming the first line that differs.
int check(const std::string& expected_path, const std::string& listed, const std::string& program,
          const std::string& include_dir) {
    const std::string expected = read_file(expected_path);
    if (expected == listed) return 0;
    const std::vector<std::string> want = split_lines(expected), got = split_lines(listed);
    std::size_t line = 0;
    while (line < want.size() && line < got.size() && want[line] == got[line]) ++line;
    std::cerr << expected_path << ":" << line + 1 << ": differs from the listing of " << include_dir << "\n"
              << "  file:    " << (line < want.size() ? want[line] : "(end of file)") << "\n"
              << "  headers: " << (line < got.size() ? got[line] : "(end of listing)") << "\n"
              << "Regenerate it with: " << program << " " << include_dir << " " << expected_path << "\n";
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    const std::vector<std::string> args(argv + 1, argv + argc);
    try {
        if (args.size() == 3 && args[0] == "--check") return check(args[1], listing(args[2]), argv[0], args[2]);
        if (args.size() == 1 || args.size() == 2) {
            const std::string text = listing(args[0]);
            if (args.size() == 1) {
                std::cout << text;
                return std::cout ? 0 : 1;
            }
            std::ofstream out(args[1], std::ios::binary);
            out << text;
            if (!out.flush()) throw std::runtime_error("cannot write " + args[1]);
            return 0;
        }
        std::cerr << "usage: attn_api_listing INCLUDE_DIR [OUTPUT]\n"
                  << "       attn_api_listing --check EXPECTED INCLUDE_DIR\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "attn_api_listing: " << e.what() << "\n";
        return 1;
    }
}
