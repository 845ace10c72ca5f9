# embed.cmake: the status page's files as C, at build time, in pure CMake
# (no xxd): cmake -DDIR=<page dir> -DOUT=<file.c> -P embed.cmake.
# Every file of DIR becomes a ui_asset (uiassets.h): its bytes and one NUL,
# a content type from its extension, an ETag from its SHA-256. The build
# runs it only when a page file or this script changed (ui.cmake).
file(GLOB names RELATIVE "${DIR}" "${DIR}/*")
list(SORT names)
set(arrays "")
set(rows "")
set(i 0)
foreach(name IN LISTS names)
  if(IS_DIRECTORY "${DIR}/${name}")
    continue()
  endif()
  if(name MATCHES "[^A-Za-z0-9._-]")
    message(FATAL_ERROR "embed.cmake: ${name}: a page file is named [A-Za-z0-9._-]")
  endif()
  file(READ "${DIR}/${name}" hex HEX)
  file(SHA256 "${DIR}/${name}" sum)
  string(LENGTH "${hex}" hexlen)
  math(EXPR size "${hexlen} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(REPEAT "0x..," 16 line) # CMake's regex has no {n}
  string(REGEX REPLACE "(${line})" "\\1\n    " bytes "${bytes}")
  string(SUBSTRING "${sum}" 0 20 tag)
  if(name MATCHES "\\.html$")
    set(type "text/html; charset=utf-8")
  elseif(name MATCHES "\\.js$")
    set(type "text/javascript; charset=utf-8")
  elseif(name MATCHES "\\.css$")
    set(type "text/css; charset=utf-8")
  elseif(name MATCHES "\\.svg$")
    set(type "image/svg+xml")
  elseif(name MATCHES "\\.png$")
    set(type "image/png")
  else()
    set(type "application/octet-stream")
  endif()
  string(APPEND arrays "static const unsigned char ui_asset_${i}[] = {\n    ${bytes}0x00};\n")
  string(APPEND rows "    {\"${name}\", \"${type}\", \"\\\"${tag}\\\"\", ui_asset_${i}, ${size}},\n")
  math(EXPR i "${i} + 1")
endforeach()
if(i EQUAL 0)
  message(FATAL_ERROR "embed.cmake: ${DIR}: no page files")
endif()
set(text "/* Generated from query/ui/page/ by query/ui/embed.cmake: do not edit. */
#include \"uiassets.h\"

${arrays}
const ui_asset ui_assets[] = {
${rows}};
const size_t ui_nassets = ${i};
")
file(WRITE "${OUT}" "${text}")
