#pragma once
// The data layer (namespace ember::data): datasets, readers, transforms and the DataLoader.
#include "data/collate.h"
#include "data/csv.h"
#include "data/dataset.h"
#include "data/idx.h"
#include "data/image_decode.h"
#include "data/image_folder.h"
#include "data/image_transforms.h"
#include "data/loader.h"
#include "data/shard.h"
#include "data/text.h"
#include "data/transforms.h"
