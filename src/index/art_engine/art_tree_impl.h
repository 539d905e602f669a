// art_engine/art_tree_impl.h — every ArtEngine member definition; include it in exactly one
// .cc per flavor, next to the explicit instantiation.
#pragma once

#include "index/art_engine/art_tree_base.h"
#include "index/art_engine/art_tree_check.h"
#include "index/art_engine/art_tree_insert.h"
#include "index/art_engine/art_tree_read.h"
#include "index/art_engine/art_tree_remove.h"
