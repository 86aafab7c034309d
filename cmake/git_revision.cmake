# Run at every build (not only at configure time): writes the source tree's git revision to
# ${OUTPUT}, touching the file only when the revision changed, so that a new commit rebuilds the
# few files that record it and nothing else. "-modified" marks uncommitted changes.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE revision OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                RESULT_VARIABLE failed)
if(failed OR NOT revision)
  set(revision "unknown")
else()
  execute_process(COMMAND git diff --quiet HEAD -- WORKING_DIRECTORY ${SOURCE_DIR}
                  RESULT_VARIABLE modified ERROR_QUIET)
  if(modified)
    set(revision "${revision}-modified")
  endif()
endif()
set(content "#pragma once\n// Generated at build time by cmake/git_revision.cmake.\n#define LPDT_GIT_REVISION \"${revision}\"\n")
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} old)
endif()
if(NOT old STREQUAL content)
  file(WRITE ${OUTPUT} "${content}")
endif()
