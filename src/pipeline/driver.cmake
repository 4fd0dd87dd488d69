# mineru_pipeline: the model-driven half of the document job (inputs -> pages -> layout -> crops
# -> recognition -> assembly -> files). Depends on mineru_pipeline_post, engine, pdf, image.
add_library(mineru_pipeline STATIC
  ${CMAKE_CURRENT_LIST_DIR}/replay_backend.cc
  ${CMAKE_CURRENT_LIST_DIR}/model_backend.cc
  ${CMAKE_CURRENT_LIST_DIR}/page_source.cc
  ${CMAKE_CURRENT_LIST_DIR}/pdf_text.cc
  ${CMAKE_CURRENT_LIST_DIR}/layout_picture.cc
  ${CMAKE_CURRENT_LIST_DIR}/table_images.cc
  ${CMAKE_CURRENT_LIST_DIR}/document.cc)
target_link_libraries(mineru_pipeline PUBLIC mineru_pipeline_post mineru_engine mineru_pdf mineru_image)
