// The translation unit that builds the precompiled header cmake/muir_pch.h
// (CMakeLists.txt, MUIR_PCH); it has no code of its own.
