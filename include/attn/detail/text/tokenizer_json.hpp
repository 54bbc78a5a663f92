#pragma once
// Reading Hugging Face tokenizer files into an HfTokenizer (hf_tokenizer.hpp):
//   - tokenizer.json whose model is BPE, with either
//       a ByteLevel pre-tokenizer, alone or in a Sequence after Split (Isolated, not inverted,
//       one of the patterns of pretokenize.hpp, spelled exactly) and/or Digits
//       (individual_digits), and no normalizer or NFC; or
//       SentencePiece-style: a normalizer Sequence of Prepend("▁") and Replace(" " → "▁"),
//       or a Metaspace pre-tokenizer ("▁", split false), usually with byte_fallback;
//     a normalizer NFC (Unicode canonical composition, nfc.hpp; Qwen2 has it) alone or
//     anywhere in the normalizer Sequence: it commutes with Prepend and Replace, since NFC
//     never makes, removes or combines a space or "▁";
//     added_tokens (lstrip, rstrip; single_word is refused); a post-processor that is
//     null, ByteLevel, TemplateProcessing (special tokens around $A) or a Sequence of those;
//   - GPT-2's vocab.json + merges.txt, or OpenAI's encoder.json + vocab.bpe (the same two
//     files under other names): GPT-2's pattern, and <|endoftext|> as a special token when the
//     vocabulary has it.
// Anything else is an attn::format_error naming the file and what it found.

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "attn/detail/check.hpp"
#include "attn/detail/text/byte_level.hpp"
#include "attn/detail/text/hf_tokenizer.hpp"
#include "attn/detail/text/pretokenize.hpp"
#include "attn/error.hpp"

namespace attn::detail::tokenizer_json {

using nlohmann::json;

inline constexpr std::string_view gpt2_pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
inline constexpr std::string_view llama3_pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
inline constexpr std::string_view qwen2_pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

inline constexpr int largest_vocabulary = 1 << 21;
inline constexpr int deepest_sequence = 8;  // Sequence inside Sequence ...
inline constexpr std::string_view metaspace = "\u2581";

/// The type of a component ("type" member), or what was found instead.
inline std::string type_of(const json& component, const std::string& file, const char* what) {
    if (!component.is_object())
        throw format_error(message(file, ": ", what, " must be an object, got ", component.dump()));
    const auto type = component.find("type");
    if (type == component.end() || !type->is_string())
        throw format_error(message(file, ": ", what, " has no \"type\" string"));
    return type->get<std::string>();
}

inline bool flag(const json& object, const char* key, bool fallback, const std::string& file, const char* what) {
    const auto found = object.find(key);
    if (found == object.end() || found->is_null()) return fallback;
    if (!found->is_boolean())
        throw format_error(message(file, ": ", what, ".", key, " must be true or false, got ", found->dump()));
    return found->get<bool>();
}

inline std::string string_or_empty(const json& object, const char* key, const std::string& file, const char* what) {
    const auto found = object.find(key);
    if (found == object.end() || found->is_null()) return {};
    if (!found->is_string())
        throw format_error(message(file, ": ", what, ".", key, " must be a string, got ", found->dump()));
    return found->get<std::string>();
}

inline const json& array_member(const json& object, const char* key, const std::string& file, const char* what) {
    const auto found = object.find(key);
    if (found == object.end() || !found->is_array())
        throw format_error(message(file, ": ", what, ".", key, " must be an array"));
    return *found;
}

inline int token_id(const json& value, int size_limit, const std::string& file, const std::string& what) {
    if (!value.is_number_integer() || value.get<std::int64_t>() < 0 || value.get<std::int64_t>() >= size_limit)
        throw format_error(message(file, ": ", what, " must be an id in [0, ", size_limit, "), got ", value.dump()));
    return static_cast<int>(value.get<std::int64_t>());
}

/// The byte b of a byte-fallback token "<0xNN>" (upper-case hex, as SentencePiece writes
/// it), or −1.
inline int byte_token_value(std::string_view piece) {
    const auto digit = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; };
    if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return -1;
    const int high = digit(piece[3]), low = digit(piece[4]);
    return high < 0 || low < 0 ? -1 : high * 16 + low;
}

/// Fills display / piece lookup from a {piece: id} object; returns piece → id as written.
inline std::unordered_map<std::string, int> read_vocabulary(const json& vocabulary, HfTokenizer& t,
                                                            const std::string& file, const char* what) {
    if (!vocabulary.is_object()) throw format_error(message(file, ": ", what, " must be an object {token: id}"));
    if (vocabulary.empty()) throw format_error(message(file, ": ", what, " is empty"));
    std::unordered_map<std::string, int> ids;
    ids.reserve(vocabulary.size());
    int largest = -1;
    for (const auto& [piece, id_value] : vocabulary.items()) {
        const int id = token_id(id_value, largest_vocabulary, file, message(what, "[\"", piece, "\"]"));
        ids.emplace(piece, id);
        largest = std::max(largest, id);
    }
    t.display.assign(static_cast<std::size_t>(largest) + 1, std::string());
    t.text.assign(t.display.size(), std::string());
    t.added.assign(t.display.size(), 0);
    std::vector<char> taken(t.display.size(), 0);
    for (const auto& [piece, id] : ids) {
        if (taken[static_cast<std::size_t>(id)])
            throw format_error(message(file, ": ", what, ": id ", id, " is given to both '",
                                       t.display[static_cast<std::size_t>(id)], "' and '", piece, "'"));
        taken[static_cast<std::size_t>(id)] = 1;
        t.display[static_cast<std::size_t>(id)] = piece;
        t.display_ids[piece] = id;
    }
    const ByteLevelAlphabet& alphabet = ByteLevelAlphabet::get();
    for (const auto& [piece, id] : ids) {
        std::string& text = t.text[static_cast<std::size_t>(id)];
        if (t.model == HfTokenizer::Model::byte_level) {
            if (const auto bytes = alphabet.decode(piece)) {
                text = *bytes;
                t.piece_ids.emplace(*bytes, id);
            } else {
                text = piece;  // not in the byte alphabet: never produced by merging, written as it is
            }
        } else {
            t.piece_ids.emplace(piece, id);
            const int byte = byte_token_value(piece);
            if (byte >= 0 && t.byte_fallback) {
                text = std::string(1, static_cast<char>(byte));
                t.byte_ids[static_cast<std::size_t>(byte)] = id;
            } else {
                for (std::size_t at = 0; at < piece.size();) {
                    if (piece.compare(at, metaspace.size(), metaspace) == 0) {
                        text += ' ';
                        at += metaspace.size();
                    } else {
                        text += piece[at++];
                    }
                }
            }
        }
    }
    return ids;
}

/// Adds the merges (rank = position in the list) of "left right" strings or [left, right] pairs.
template <class Parts>
void add_merge(HfTokenizer& t, const std::unordered_map<std::string, int>& ids, const Parts& parts, int rank,
               const std::string& file, const std::string& where) {
    const auto& [left, right] = parts;
    const auto id_of = [&](const std::string& piece, const char* side) {
        const auto found = ids.find(piece);
        if (found == ids.end())
            throw format_error(
                message(file, ": ", where, ": the ", side, " part '", piece, "' is not in the vocabulary"));
        return found->second;
    };
    const int left_id = id_of(left, "left");
    const int right_id = id_of(right, "right");
    const auto result = ids.find(left + right);
    if (result == ids.end())
        throw format_error(message(file, ": ", where, ": the result '", left, right, "' of merging '", left, "' and '",
                                   right, "' is not in the vocabulary"));
    t.merges.set(left_id, right_id, rank, result->second);
}

inline std::pair<std::string, std::string> split_merge_line(std::string_view line, const std::string& file,
                                                            const std::string& where) {
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string_view::npos)
        throw format_error(message(file, ": ", where,
                                   ": expected 'left right' (two non-empty parts separated by one "
                                   "space), got '",
                                   line, "'"));
    return {std::string(line.substr(0, space)), std::string(line.substr(space + 1))};
}

inline void set_byte_tokens(HfTokenizer& t, const std::string& file) {
    if (t.model != HfTokenizer::Model::byte_level) return;
    const ByteLevelAlphabet& alphabet = ByteLevelAlphabet::get();
    for (int byte = 0; byte < 256; ++byte) {
        const auto found = t.piece_ids.find(std::string(1, static_cast<char>(byte)));
        if (found == t.piece_ids.end())
            throw format_error(message(file, ": the vocabulary has no token for the byte 0x",
                                       "0123456789ABCDEF"[byte >> 4], "0123456789ABCDEF"[byte & 15], " ('",
                                       alphabet.encode(static_cast<unsigned char>(byte)),
                                       "'); a byte-level vocabulary needs all 256"));
        t.byte_ids[static_cast<std::size_t>(byte)] = found->second;
    }
}

inline void add_token(HfTokenizer& t, AddedToken token, const std::string& file) {
    const std::size_t id = static_cast<std::size_t>(token.id);
    if (id >= t.display.size()) {
        t.display.resize(id + 1);
        t.text.resize(id + 1);
        t.added.resize(id + 1, 0);
    }
    if (!t.display[id].empty() && t.display[id] != token.content && !t.added[id])
        throw format_error(message(file, ": added token '", token.content, "' has id ", token.id,
                                   ", which the vocabulary gives to '", t.display[id], "'"));
    t.display[id] = token.content;
    t.display_ids[token.content] = token.id;
    t.text[id] = token.content;
    t.added[id] = 1;
    t.added_first_byte[static_cast<unsigned char>(token.content[0])] = true;
    t.added_tokens.push_back(std::move(token));
}

inline SplitPattern known_pattern(const std::string& pattern, const std::string& file) {
    if (pattern == gpt2_pattern) return SplitPattern::gpt2;
    if (pattern == llama3_pattern) return SplitPattern::llama3;
    if (pattern == qwen2_pattern) return SplitPattern::qwen2;
    throw format_error(message(file, ": pre_tokenizer Split pattern '", pattern,
                               "' is not supported (attn matches the GPT-2, Llama-3 and Qwen2 patterns by hand)"));
}

struct PreTokenizerInfo {
    bool byte_level = false;
    bool metaspace = false;
    HfTokenizer::Prepend prepend = HfTokenizer::Prepend::never;
};

inline void read_pre_tokenizer(const json& p, HfTokenizer& t, PreTokenizerInfo& info, const std::string& file,
                               int depth = 0) {
    if (depth > deepest_sequence)
        throw format_error(message(file, ": pre_tokenizer Sequences nested more than ", deepest_sequence, " deep"));
    const std::string type = type_of(p, file, "pre_tokenizer");
    if (type == "Sequence") {
        for (const json& step : array_member(p, "pretokenizers", file, "pre_tokenizer"))
            read_pre_tokenizer(step, t, info, file, depth + 1);
    } else if (type == "ByteLevel") {
        info.byte_level = true;
        if (flag(p, "add_prefix_space", false, file, "pre_tokenizer ByteLevel"))
            t.steps.push_back({PreTokenizerStep::Kind::byte_level_prefix_space, SplitPattern::gpt2});
        if (flag(p, "use_regex", true, file, "pre_tokenizer ByteLevel"))
            t.steps.push_back({PreTokenizerStep::Kind::split_pattern, SplitPattern::gpt2});
    } else if (type == "Split") {
        const auto pattern = p.find("pattern");
        if (pattern == p.end() || !pattern->is_object() || !pattern->contains("Regex") ||
            !(*pattern)["Regex"].is_string())
            throw format_error(message(file, ": pre_tokenizer Split needs a pattern {\"Regex\": ...}, got ",
                                       pattern == p.end() ? std::string("none") : pattern->dump()));
        const std::string behavior = string_or_empty(p, "behavior", file, "pre_tokenizer Split");
        if (behavior != "Isolated")
            throw format_error(
                message(file, ": pre_tokenizer Split behavior '", behavior, "' is not supported (only Isolated)"));
        if (flag(p, "invert", false, file, "pre_tokenizer Split"))
            throw format_error(message(file, ": pre_tokenizer Split with invert true is not supported"));
        t.steps.push_back({PreTokenizerStep::Kind::split_pattern, known_pattern((*pattern)["Regex"], file)});
    } else if (type == "Digits") {
        if (!flag(p, "individual_digits", false, file, "pre_tokenizer Digits"))
            throw format_error(message(file, ": pre_tokenizer Digits without individual_digits is not supported"));
        t.steps.push_back({PreTokenizerStep::Kind::digits, SplitPattern::gpt2});
    } else if (type == "Metaspace") {
        info.metaspace = true;
        const std::string replacement = string_or_empty(p, "replacement", file, "pre_tokenizer Metaspace");
        if (replacement != metaspace)
            throw format_error(message(file, ": pre_tokenizer Metaspace replacement '", replacement,
                                       "' is not supported (only \"\u2581\")"));
        if (flag(p, "split", true, file, "pre_tokenizer Metaspace"))
            throw format_error(message(file, ": pre_tokenizer Metaspace with split true is not supported"));
        const std::string scheme = string_or_empty(p, "prepend_scheme", file, "pre_tokenizer Metaspace");
        if (scheme == "first")
            info.prepend = HfTokenizer::Prepend::first_section;
        else if (scheme == "never")
            info.prepend = HfTokenizer::Prepend::never;
        else if (scheme == "always" ||
                 (scheme.empty() && flag(p, "add_prefix_space", true, file, "pre_tokenizer Metaspace")))
            info.prepend = HfTokenizer::Prepend::always;
        else if (!scheme.empty())
            throw format_error(
                message(file, ": pre_tokenizer Metaspace prepend_scheme '", scheme, "' is not supported"));
    } else {
        throw format_error(message(file, ": pre_tokenizer type '", type,
                                   "' is not supported (attn reads ByteLevel, Split, Digits, Metaspace and Sequence)"));
    }
}

struct NormalizerInfo {
    bool prepends = false;  // Prepend("▁")
    bool replaces = false;  // Replace(" " → "▁")
    bool nfc = false;
};

/// NFC and the SentencePiece normaliser, Prepend("▁") and/or Replace(" " → "▁"), alone or in a Sequence.
inline void read_normalizer(const json& n, NormalizerInfo& info, const std::string& file, int depth = 0) {
    if (depth > deepest_sequence)
        throw format_error(message(file, ": normalizer Sequences nested more than ", deepest_sequence, " deep"));
    const std::string type = type_of(n, file, "normalizer");
    if (type == "Sequence") {
        for (const json& step : array_member(n, "normalizers", file, "normalizer"))
            read_normalizer(step, info, file, depth + 1);
    } else if (type == "Prepend") {
        const std::string prepend = string_or_empty(n, "prepend", file, "normalizer Prepend");
        if (prepend != metaspace)
            throw format_error(
                message(file, ": normalizer Prepend '", prepend, "' is not supported (only \"\u2581\")"));
        info.prepends = true;
    } else if (type == "Replace") {
        const auto pattern = n.find("pattern");
        const std::string content = string_or_empty(n, "content", file, "normalizer Replace");
        if (pattern == n.end() || !pattern->is_object() || pattern->value("String", std::string()) != " " ||
            content != metaspace)
            throw format_error(
                message(file, ": normalizer Replace other than \" \" → \"\u2581\" is not supported, got ", n.dump()));
        info.replaces = true;
    } else if (type == "NFC") {
        info.nfc = true;
    } else {
        throw format_error(message(file, ": normalizer type '", type,
                                   "' is not supported (attn reads NFC and the SentencePiece-style Prepend and "
                                   "Replace)"));
    }
}

inline void read_post_processor(const json& p, HfTokenizer& t, const std::string& file, int depth = 0) {
    if (depth > deepest_sequence)
        throw format_error(message(file, ": post_processor Sequences nested more than ", deepest_sequence, " deep"));
    const std::string type = type_of(p, file, "post_processor");
    if (type == "Sequence") {
        for (const json& step : array_member(p, "processors", file, "post_processor"))
            read_post_processor(step, t, file, depth + 1);
    } else if (type == "ByteLevel") {
        // offsets only
    } else if (type == "TemplateProcessing") {
        const auto specials = p.find("special_tokens");
        const auto ids_of = [&](const std::string& name) {
            if (specials == p.end() || !specials->is_object() || !specials->contains(name))
                throw format_error(message(file, ": post_processor TemplateProcessing uses the special token '", name,
                                           "', which its special_tokens do not define"));
            const json& entry = (*specials)[name];
            std::vector<int> ids;
            for (const json& id : array_member(entry, "ids", file, "post_processor special token"))
                ids.push_back(token_id(id, t.size(), file, message("post_processor special token '", name, "' id")));
            return ids;
        };
        bool seen_sequence = false;
        for (const json& item : array_member(p, "single", file, "post_processor TemplateProcessing")) {
            if (item.is_object() && item.contains("Sequence")) {
                if (seen_sequence)
                    throw format_error(message(file, ": post_processor TemplateProcessing single has two sequences"));
                seen_sequence = true;
            } else if (item.is_object() && item.contains("SpecialToken") && item["SpecialToken"].is_object() &&
                       item["SpecialToken"].value("id", json()).is_string()) {
                const std::vector<int> ids = ids_of(item["SpecialToken"]["id"].get<std::string>());
                auto& into = seen_sequence ? t.suffix_ids : t.prefix_ids;
                into.insert(into.end(), ids.begin(), ids.end());
            } else {
                throw format_error(message(file, ": post_processor TemplateProcessing item ", item.dump(),
                                           " is neither a Sequence nor a SpecialToken"));
            }
        }
        if (!seen_sequence)
            throw format_error(message(file, ": post_processor TemplateProcessing single has no sequence $A"));
    } else {
        throw format_error(message(file, ": post_processor type '", type,
                                   "' is not supported (attn reads ByteLevel, TemplateProcessing and Sequence)"));
    }
}

inline json parse(std::string_view text, const std::string& file) {
    try {
        return json::parse(text.begin(), text.end());
    } catch (const json::exception& e) {
        throw format_error(message(file, ": not valid JSON: ", e.what()));
    }
}

/// A tokenizer.json's contents; `file` names it in messages.
inline HfTokenizer read_tokenizer_json(std::string_view contents, const std::string& file) {
    const json root = parse(contents, file);
    if (!root.is_object()) throw format_error(message(file, ": the top level must be an object"));
    const auto model_it = root.find("model");
    if (model_it == root.end()) throw format_error(message(file, ": missing \"model\""));
    const json& model = *model_it;
    const std::string model_type = type_of(model, file, "model");
    if (model_type != "BPE")
        throw format_error(
            message(file, ": model type '", model_type, "' is not supported (attn reads BPE tokenizers)"));
    if (model.contains("dropout") && !model["dropout"].is_null())
        throw format_error(message(file, ": model.dropout ", model["dropout"].dump(), " is not supported"));
    for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"})
        if (!string_or_empty(model, affix, file, "model").empty())
            throw format_error(message(file, ": model.", affix, " is not supported"));

    HfTokenizer t;
    t.source = file;
    t.byte_ids.fill(-1);

    PreTokenizerInfo info;
    if (root.contains("pre_tokenizer") && !root["pre_tokenizer"].is_null())
        read_pre_tokenizer(root["pre_tokenizer"], t, info, file);
    NormalizerInfo normalizer;
    if (root.contains("normalizer") && !root["normalizer"].is_null())
        read_normalizer(root["normalizer"], normalizer, file);
    t.nfc = normalizer.nfc;
    const bool prepends = normalizer.prepends, replaces = normalizer.replaces;
    t.byte_fallback = flag(model, "byte_fallback", false, file, "model");
    if (info.byte_level) {
        if (info.metaspace || prepends || replaces || t.byte_fallback)
            throw format_error(message(file,
                                       ": a ByteLevel pre-tokenizer with a SentencePiece normalizer, Metaspace "
                                       "or byte_fallback is not supported"));
        t.model = HfTokenizer::Model::byte_level;
    } else if (info.metaspace || replaces) {
        if (info.metaspace && (prepends || replaces))
            throw format_error(message(file, ": both a Metaspace pre-tokenizer and a Prepend/Replace normalizer"));
        if (!t.steps.empty())
            throw format_error(message(file,
                                       ": Split or Digits pre-tokenizers with SentencePiece-style BPE are not "
                                       "supported"));
        t.model = HfTokenizer::Model::sentencepiece;
        t.prepend =
            info.metaspace ? info.prepend : (prepends ? HfTokenizer::Prepend::always : HfTokenizer::Prepend::never);
    } else {
        throw format_error(message(file,
                                   ": a BPE model needs a ByteLevel pre-tokenizer or a SentencePiece-style "
                                   "normalizer (Replace \" \" → \"\u2581\") or Metaspace pre-tokenizer"));
    }
    t.ignore_merges = flag(model, "ignore_merges", false, file, "model");
    t.fuse_unknown = flag(model, "fuse_unk", false, file, "model");

    const auto vocabulary = model.find("vocab");
    if (vocabulary == model.end()) throw format_error(message(file, ": missing \"model.vocab\""));
    const auto ids = read_vocabulary(*vocabulary, t, file, "model.vocab");
    const std::string unknown = string_or_empty(model, "unk_token", file, "model");
    if (!unknown.empty()) {
        const auto found = ids.find(unknown);
        if (found == ids.end())
            throw format_error(message(file, ": model.unk_token '", unknown, "' is not in the vocabulary"));
        t.unknown_id = found->second;
    }
    const json& merges = array_member(model, "merges", file, "model");
    for (std::size_t k = 0; k < merges.size(); ++k) {
        const std::string where = message("model.merges[", k, "]");
        const json& merge = merges[k];
        if (merge.is_string()) {
            add_merge(t, ids, split_merge_line(merge.get_ref<const std::string&>(), file, where), static_cast<int>(k),
                      file, where);
        } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
            add_merge(t, ids, std::pair<std::string, std::string>(merge[0], merge[1]), static_cast<int>(k), file,
                      where);
        } else {
            throw format_error(
                message(file, ": ", where, " must be \"left right\" or [left, right], got ", merge.dump()));
        }
    }
    set_byte_tokens(t, file);

    if (root.contains("added_tokens") && !root["added_tokens"].is_null()) {
        const json& added = array_member(root, "added_tokens", file, "tokenizer.json");
        for (std::size_t k = 0; k < added.size(); ++k) {
            const std::string where = message("added_tokens[", k, "]");
            const json& entry = added[k];
            if (!entry.is_object()) throw format_error(message(file, ": ", where, " must be an object"));
            AddedToken token;
            token.content = string_or_empty(entry, "content", file, where.c_str());
            if (token.content.empty()) throw format_error(message(file, ": ", where, " has no content"));
            if (!entry.contains("id")) throw format_error(message(file, ": ", where, " has no id"));
            token.id = token_id(entry["id"], largest_vocabulary, file, where + ".id");
            token.special = flag(entry, "special", false, file, where.c_str());
            token.lstrip = flag(entry, "lstrip", false, file, where.c_str());
            token.rstrip = flag(entry, "rstrip", false, file, where.c_str());
            if (flag(entry, "single_word", false, file, where.c_str()))
                throw format_error(message(file, ": ", where, " '", token.content, "': single_word is not supported"));
            add_token(t, std::move(token), file);
        }
    }
    if (root.contains("post_processor") && !root["post_processor"].is_null())
        read_post_processor(root["post_processor"], t, file);
    return t;
}

/// GPT-2's two files: vocab.json (or encoder.json) and merges.txt (or vocab.bpe).
inline HfTokenizer read_gpt2_files(std::string_view vocabulary_json, std::string_view merges_text,
                                   const std::string& vocabulary_file, const std::string& merges_file) {
    HfTokenizer t;
    t.source = message(vocabulary_file, " + ", merges_file);
    t.byte_ids.fill(-1);
    t.model = HfTokenizer::Model::byte_level;
    t.steps.push_back({PreTokenizerStep::Kind::split_pattern, SplitPattern::gpt2});
    const auto ids = read_vocabulary(parse(vocabulary_json, vocabulary_file), t, vocabulary_file, "the vocabulary");
    std::size_t start = 0;
    int rank = 0;
    for (int line_number = 1; start < merges_text.size(); ++line_number) {
        std::size_t end = merges_text.find('\n', start);
        if (end == std::string_view::npos) end = merges_text.size();
        std::string_view line = merges_text.substr(start, end - start);
        start = end + 1;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty() || (line_number == 1 && line.substr(0, 9) == "#version:")) continue;
        const std::string where = message("line ", line_number);
        add_merge(t, ids, split_merge_line(line, merges_file, where), rank++, merges_file, where);
    }
    set_byte_tokens(t, vocabulary_file);
    if (const auto end_of_text = ids.find("<|endoftext|>"); end_of_text != ids.end())
        add_token(t, AddedToken{"<|endoftext|>", end_of_text->second, true, false, false}, vocabulary_file);
    return t;
}

}  // namespace attn::detail::tokenizer_json
