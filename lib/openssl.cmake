# The static release binary's OpenSSL: a TLS-client build of OpenSSL 3 from the source tree in
# MANIFOLD_OPENSSL_SOURCE (Debian's source package, fetched by lib/fetch-openssl-source.sh), made at
# configure time into <build>/openssl and used in place of the distribution's libssl.a/libcrypto.a.
# The distribution's archives carry every algorithm OpenSSL has (its default provider references
# them all, so the linker cannot drop any): 3.7 MB of the binary and, in a fresh process, a
# SSL_CTX_new that builds a method for each of them. manifold speaks TLS 1.2 and 1.3 to an API
# server (ECDHE with P-256/P-384/X25519, RSA and ECDSA certificates, AES-GCM and ChaCha20-Poly1305,
# resumption tickets); everything else is configured out below: the binary is 2 MB smaller and
# SSL_CTX_new runs half the instructions. No callback of ours lets an exception into OpenSSL's
# frames, so its C code is built without unwind tables. Included by the top-level CMakeLists.txt
# for MANIFOLD_STATIC builds; sets OPENSSL_ROOT_DIR and friends for find_package(OpenSSL), and
# MANIFOLD_TLS_LIBRARY_BUILD for `manifold version`.

set(MANIFOLD_OPENSSL_SOURCE "" CACHE PATH
    "OpenSSL 3 source tree for the static binary's TLS-client build (lib/fetch-openssl-source.sh); empty: the distribution's libssl.a")
set(MANIFOLD_TLS_LIBRARY_BUILD "the distribution's libssl.a and libcrypto.a")
if(NOT MANIFOLD_OPENSSL_SOURCE)
  if(OPENSSL_INCLUDE_DIR MATCHES "^${CMAKE_BINARY_DIR}/openssl/")  # left by an earlier configure with a source
    unset(OPENSSL_INCLUDE_DIR CACHE)
    unset(OPENSSL_SSL_LIBRARY CACHE)
    unset(OPENSSL_CRYPTO_LIBRARY CACHE)
  endif()
  message(STATUS "Static binary: the distribution's full OpenSSL (about 2 MB larger than the TLS-client "
                 "build; see lib/fetch-openssl-source.sh and MANIFOLD_OPENSSL_SOURCE)")
  return()
endif()
get_filename_component(openssl_src "${MANIFOLD_OPENSSL_SOURCE}" ABSOLUTE)
if(NOT EXISTS "${openssl_src}/Configure")
  message(FATAL_ERROR "MANIFOLD_OPENSSL_SOURCE=${MANIFOLD_OPENSSL_SOURCE} is not an OpenSSL source tree (no Configure)")
endif()

# What a TLS client of an API server does not use. Kept although unused by us: DH (Boost.Asio's
# ssl::context calls its functions), PSK (TLS 1.3 resumption is built on it), sockets and stdio.
set(MANIFOLD_OPENSSL_OPTIONS
    no-shared no-module no-legacy no-engine no-dso no-tests no-comp no-zlib no-autoload-config
    no-ssl3 no-tls1 no-tls1_1 no-dtls no-srp no-srtp no-sctp no-nextprotoneg no-ssl-trace
    no-ct no-ocsp no-cms no-ts no-cmp no-rfc3779
    no-idea no-des no-rc2 no-rc4 no-rc5 no-md4 no-mdc2 no-rmd160 no-whirlpool no-seed no-bf no-cast
    no-camellia no-aria no-sm2 no-sm3 no-sm4 no-siphash no-blake2 no-gost no-ec2m no-dsa no-scrypt
    no-ocb no-siv no-multiblock no-ui-console no-filenames no-weak-ssl-ciphers no-uplink
    no-afalgeng no-capieng no-padlockeng no-loadereng no-devcryptoeng)
set(openssl_cflags -Os -ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables -fno-unwind-tables)

set(openssl_build "${CMAKE_BINARY_DIR}/openssl/build")
set(openssl_prefix "${CMAKE_BINARY_DIR}/openssl/prefix")
file(READ "${openssl_src}/VERSION.dat" openssl_version_dat)
set(openssl_origin "OpenSSL source")
if(EXISTS "${openssl_src}/.manifold-source")
  file(STRINGS "${openssl_src}/.manifold-source" openssl_origin LIMIT_COUNT 1)
endif()
string(SHA256 openssl_key "${openssl_src}|${openssl_origin}|${openssl_version_dat}|${MANIFOLD_OPENSSL_OPTIONS}|${openssl_cflags}|${CMAKE_C_COMPILER}")
set(openssl_stamp "${openssl_prefix}/manifold-build.stamp")
set(openssl_done "")
if(EXISTS "${openssl_stamp}")
  file(READ "${openssl_stamp}" openssl_done)
endif()

if(NOT openssl_done STREQUAL openssl_key)
  message(STATUS "Building the TLS-client OpenSSL from ${openssl_src} (${openssl_origin}); a few minutes, once per build tree")
  file(REMOVE_RECURSE "${openssl_build}" "${openssl_prefix}")
  file(MAKE_DIRECTORY "${openssl_build}")
  cmake_host_system_information(RESULT openssl_jobs QUERY NUMBER_OF_LOGICAL_CORES)
  foreach(step
      "perl;${openssl_src}/Configure;linux-x86_64;--prefix=${openssl_prefix};--libdir=lib;CC=${CMAKE_C_COMPILER};${MANIFOLD_OPENSSL_OPTIONS};${openssl_cflags}"
      "make;-j${openssl_jobs};build_libs"
      "make;install_dev")
    execute_process(COMMAND ${step} WORKING_DIRECTORY "${openssl_build}" RESULT_VARIABLE rc
                    OUTPUT_FILE "${openssl_build}/manifold-build.log" ERROR_FILE "${openssl_build}/manifold-build.err")
    if(NOT rc EQUAL 0)
      file(READ "${openssl_build}/manifold-build.err" err)
      message(FATAL_ERROR "Building OpenSSL from ${openssl_src} failed at `${step}` (${rc}):\n${err}")
    endif()
  endforeach()
  file(WRITE "${openssl_stamp}" "${openssl_key}")
endif()

set(OPENSSL_ROOT_DIR "${openssl_prefix}")
set(OPENSSL_INCLUDE_DIR "${openssl_prefix}/include" CACHE PATH "" FORCE)
set(OPENSSL_SSL_LIBRARY "${openssl_prefix}/lib/libssl.a" CACHE FILEPATH "" FORCE)
set(OPENSSL_CRYPTO_LIBRARY "${openssl_prefix}/lib/libcrypto.a" CACHE FILEPATH "" FORCE)
set(MANIFOLD_TLS_LIBRARY_BUILD "TLS-client build of ${openssl_origin}")
