// artcommon/art_tree_impl.h — every ArtTree member definition; include it in exactly one
// .cc per flavor, next to the explicit instantiation.
#pragma once

#include "index/artcommon/art_tree_base.h"
#include "index/artcommon/art_tree_check.h"
#include "index/artcommon/art_tree_insert.h"
#include "index/artcommon/art_tree_read.h"
#include "index/artcommon/art_tree_remove.h"
