// The extern "C" entry points of the provider choice (rootspan.h).
#include "core/c_api_support.hpp"
#include "core/loader/provider_choice.hpp"

struct rootspan_provider_choice {
  rootspan::ProviderChoice choice;
};

extern "C" {

rootspan_status rootspan_provider_choose(const rootspan_context *context, const char *requested, uint32_t device,
                                         rootspan_provider_choice **choice, rootspan_error **error) {
  using namespace rootspan::c_api;
  if (context == nullptr || choice == nullptr) {
    return invalid(error, "provider_choose", "context or choice is NULL");
  }
  *choice = nullptr;
  return guarded(error, "provider_choose", [&]() -> rootspan::Result<void> {
    auto chosen =
        rootspan::choose_provider(context->context->reports(), requested == nullptr ? "auto" : requested, device);
    if (!chosen) return chosen.error();
    *choice = new rootspan_provider_choice{std::move(chosen).value()};
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  });
}

const char *rootspan_provider_choice_name(const rootspan_provider_choice *choice) {
  return choice == nullptr ? nullptr : choice->choice.provider.c_str();
}

const char *rootspan_provider_choice_explanation(const rootspan_provider_choice *choice) {
  return choice == nullptr ? nullptr : choice->choice.explanation.c_str();
}

void rootspan_provider_choice_free(rootspan_provider_choice *choice) { delete choice; }

}  // extern "C"
